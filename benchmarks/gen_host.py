"""Generate realistic GPU host-code files of a given number of lines (shapes from the corpus).

python benchmarks/gen_host.py LINES > file.mlir
"""

from __future__ import annotations

import random
import sys

KERNELS = """  gpu.module @kernels {
    gpu.func @scale(%buf: memref<?xf32>, %f: f32) kernel {
      %tid = gpu.thread_id x
      %v = memref.load %buf[%tid] : memref<?xf32>
      %w = arith.mulf %v, %f : f32
      memref.store %w, %buf[%tid] : memref<?xf32>
      gpu.return
    }
  }
"""


def function(i: int, rng: random.Random) -> list[str]:
    lines = [f"  // Host step {i}: copy in, scale on the device, copy out.",
             f"  func.func @step{i}(%host: memref<?xf32>, %n: index, %f: f32) {{",
             "    %c0 = arith.constant 0 : index",
             "    %c1 = arith.constant 1 : index",
             "    %c256 = arith.constant 256 : index",
             "    %dev = gpu.alloc (%n) : memref<?xf32>",
             "    gpu.memcpy %dev, %host : memref<?xf32>, memref<?xf32>",
             "    %blocks = arith.ceildivui %n, %c256 : index"]
    for _ in range(rng.randint(1, 4)):
        lines += ["    gpu.launch_func @kernels::@scale",
                  "        blocks in (%blocks, %c1, %c1) threads in (%c256, %c1, %c1)",
                  "        args(%dev : memref<?xf32>, %f : f32)"]
    if rng.random() < 0.5:
        lines += ["    scf.for %i = %c0 to %n step %c256 {",
                  "      %x = arith.addi %i, %c1 : index",
                  "      gpu.memset %dev, %f : memref<?xf32>, f32",
                  "    }"]
    lines += ["    gpu.memcpy %host, %dev : memref<?xf32>, memref<?xf32>",
              "    gpu.dealloc %dev : memref<?xf32>",
              "    return",
              "  }",
              ""]
    return lines


def generate(n_lines: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    out = ["module attributes {gpu.container_module} {"] + KERNELS.splitlines()
    i = 0
    while len(out) < n_lines - 1:
        out += function(i, rng)
        i += 1
    out.append("}")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(generate(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
