// A host function that already synchronizes by hand: the -gpu-async-region pass refuses it
// (`'gpu.wait' op unexpected pre-existing gpu.wait`), so gpu-async-lsp reports the gpu.wait
// as an error and leaves the function alone. Remove the gpu.wait to make it rewritable.
//
//   gpu-async-lsp check examples/blocked.mlir        # exit status 1

module attributes {gpu.container_module} {

  gpu.module @kernels {
    gpu.func @scale(%buf: memref<?xf32>, %factor: f32) kernel {
      %i = gpu.global_id x
      %x = memref.load %buf[%i] : memref<?xf32>
      %y = arith.mulf %x, %factor : f32
      memref.store %y, %buf[%i] : memref<?xf32>
      gpu.return
    }
  }

  func.func @scale(%host: memref<?xf32>, %factor: f32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %host, %c0 : memref<?xf32>
    %blocks = arith.ceildivui %n, %c256 : index
    %buf = gpu.alloc(%n) : memref<?xf32>
    gpu.memcpy %buf, %host : memref<?xf32>, memref<?xf32>
    gpu.launch_func @kernels::@scale
        blocks in (%blocks, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%buf : memref<?xf32>, %factor : f32)
    gpu.wait  // a hand-written synchronization point blocks the rewrite
    gpu.memcpy %host, %buf : memref<?xf32>, memref<?xf32>
    gpu.dealloc %buf : memref<?xf32>
    return
  }
}
