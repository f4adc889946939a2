// A host program that multiplies two N x N matrices on the GPU, one tile loop of launches
// per call. Every GPU op here runs synchronously: `gpu-async-lsp check --diff` shows how
// MLIR's -gpu-async-region pass threads an async token through them.
//
//   gpu-async-lsp check --diff examples/matmul.mlir
//   mlir-opt-22 --pass-pipeline='builtin.module(func.func(gpu-async-region))' examples/matmul.mlir

module attributes {gpu.container_module} {

  // Device code: one thread per element of C, C[i, j] += sum_k A[i, k] * B[k, j].
  gpu.module @kernels {
    gpu.func @matmul(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>,
                     %n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %bdx = gpu.block_dim x
      %bdy = gpu.block_dim y
      %row0 = arith.muli %by, %bdy : index
      %row = arith.addi %row0, %ty : index
      %col0 = arith.muli %bx, %bdx : index
      %col = arith.addi %col0, %tx : index
      %in_rows = arith.cmpi ult, %row, %n : index
      %in_cols = arith.cmpi ult, %col, %n : index
      %inside = arith.andi %in_rows, %in_cols : i1
      scf.if %inside {
        %init = memref.load %c[%row, %col] : memref<?x?xf32>
        %sum = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (f32) {
          %x = memref.load %a[%row, %k] : memref<?x?xf32>
          %y = memref.load %b[%k, %col] : memref<?x?xf32>
          %xy = arith.mulf %x, %y : f32
          %next = arith.addf %acc, %xy : f32
          scf.yield %next : f32
        }
        memref.store %sum, %c[%row, %col] : memref<?x?xf32>
      }
      gpu.return
    }
  }

  func.func private @print_memref_f32(memref<*xf32>)

  // C = A * B, with A, B and C in host memory.
  func.func @matmul(%host_a: memref<?x?xf32>, %host_b: memref<?x?xf32>,
                    %host_c: memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0.0 : f32
    %n = memref.dim %host_a, %c0 : memref<?x?xf32>
    // A grid of 16 x 16 tiles covering the matrix.
    %tiles = arith.ceildivui %n, %c16 : index

    %a = gpu.alloc(%n, %n) : memref<?x?xf32>
    %b = gpu.alloc(%n, %n) : memref<?x?xf32>
    %c = gpu.alloc(%n, %n) : memref<?x?xf32>
    gpu.memcpy %a, %host_a : memref<?x?xf32>, memref<?x?xf32>
    gpu.memcpy %b, %host_b : memref<?x?xf32>, memref<?x?xf32>
    gpu.memset %c, %zero : memref<?x?xf32>, f32

    gpu.launch_func @kernels::@matmul
        blocks in (%tiles, %tiles, %c1) threads in (%c16, %c16, %c1)
        args(%a : memref<?x?xf32>, %b : memref<?x?xf32>, %c : memref<?x?xf32>, %n : index)

    gpu.memcpy %host_c, %c : memref<?x?xf32>, memref<?x?xf32>  // result back to the host
    gpu.dealloc %a : memref<?x?xf32>
    gpu.dealloc %b : memref<?x?xf32>
    gpu.dealloc %c : memref<?x?xf32>
    %unranked = memref.cast %host_c : memref<?x?xf32> to memref<*xf32>
    call @print_memref_f32(%unranked) : (memref<*xf32>) -> ()
    return
  }

  // C = A^steps, one launch per step, ping-ponging two device buffers.
  func.func @matmul_power(%host_a: memref<?x?xf32>, %host_c: memref<?x?xf32>,
                          %steps: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0.0 : f32
    %n = memref.dim %host_a, %c0 : memref<?x?xf32>
    %tiles = arith.ceildivui %n, %c16 : index
    %a = gpu.alloc(%n, %n) : memref<?x?xf32>
    %p = gpu.alloc(%n, %n) : memref<?x?xf32>
    %q = gpu.alloc(%n, %n) : memref<?x?xf32>
    gpu.memcpy %a, %host_a : memref<?x?xf32>, memref<?x?xf32>
    gpu.memcpy %p, %host_a : memref<?x?xf32>, memref<?x?xf32>
    %last, %spare = scf.for %i = %c1 to %steps step %c1
        iter_args(%src = %p, %dst = %q) -> (memref<?x?xf32>, memref<?x?xf32>) {
      gpu.memset %dst, %zero : memref<?x?xf32>, f32
      gpu.launch_func @kernels::@matmul
          blocks in (%tiles, %tiles, %c1) threads in (%c16, %c16, %c1)
          args(%src : memref<?x?xf32>, %a : memref<?x?xf32>, %dst : memref<?x?xf32>,
               %n : index)
      scf.yield %dst, %src : memref<?x?xf32>, memref<?x?xf32>
    }
    gpu.memcpy %host_c, %last : memref<?x?xf32>, memref<?x?xf32>
    gpu.dealloc %a : memref<?x?xf32>
    gpu.dealloc %p : memref<?x?xf32>
    gpu.dealloc %q : memref<?x?xf32>
    return
  }
}
