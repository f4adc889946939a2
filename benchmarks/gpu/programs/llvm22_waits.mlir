// harness: --semantics llvm22
// Threaded by hand in part: a `gpu.wait async` chain that allocates and clears a buffer, a
// `gpu.wait` that joins it, then synchronous ops. The original pass refuses the function
// (pre-existing gpu.wait, already-async ops); LLVM 22's threads its token through them.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @add_index(%buf: memref<32xf32>) kernel {
      %i = gpu.thread_id x
      %i_i32 = arith.index_cast %i : index to i32
      %f = arith.sitofp %i_i32 : i32 to f32
      %x = memref.load %buf[%i] : memref<32xf32>
      %y = arith.addf %x, %f : f32
      memref.store %y, %buf[%i] : memref<32xf32>
      gpu.return
    }
  }

  func.func private @printMemrefF32(memref<*xf32>)

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %half = arith.constant 0.5 : f32
    %minus_one = arith.constant -1.0 : f32
    %host = memref.alloc() : memref<32xf32>
    scf.for %i = %c0 to %c32 step %c1 {
      memref.store %minus_one, %host[%i] : memref<32xf32>
    }
    %t0 = gpu.wait async
    %dev, %t1 = gpu.alloc async [%t0] () : memref<32xf32>
    %t2 = gpu.memset async [%t1] %dev, %half : memref<32xf32>, f32
    gpu.wait [%t2]
    gpu.launch_func @kernels::@add_index blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%dev : memref<32xf32>)
    gpu.memcpy %host, %dev : memref<32xf32>, memref<32xf32>
    gpu.dealloc %dev : memref<32xf32>
    %printed = memref.cast %host : memref<32xf32> to memref<*xf32>
    call @printMemrefF32(%printed) : (memref<*xf32>) -> ()
    memref.dealloc %host : memref<32xf32>
    return
  }
}
