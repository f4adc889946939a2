// A synchronous round trip: alloc, memset, launch, copy to a host buffer, dealloc, print.
// As written it does not lower (LLVM 22's gpu-to-llvm leaves the synchronous memory ops);
// rewritten by `check --fix`, it must.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%buf: memref<16xf32>, %factor: f32) kernel {
      %i = gpu.thread_id x
      %x = memref.load %buf[%i] : memref<16xf32>
      %y = arith.mulf %x, %factor : f32
      memref.store %y, %buf[%i] : memref<16xf32>
      gpu.return
    }
  }

  func.func private @printMemrefF32(memref<*xf32>)

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %two = arith.constant 2.0 : f32
    %three = arith.constant 3.0 : f32
    %minus_one = arith.constant -1.0 : f32
    %host = memref.alloc() : memref<16xf32>
    scf.for %i = %c0 to %c16 step %c1 {
      memref.store %minus_one, %host[%i] : memref<16xf32>
    }
    %dev = gpu.alloc () : memref<16xf32>
    gpu.memset %dev, %two : memref<16xf32>, f32
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1)
        args(%dev : memref<16xf32>, %three : f32)
    gpu.memcpy %host, %dev : memref<16xf32>, memref<16xf32>
    gpu.dealloc %dev : memref<16xf32>
    %printed = memref.cast %host : memref<16xf32> to memref<*xf32>
    call @printMemrefF32(%printed) : (memref<*xf32>) -> ()
    memref.dealloc %host : memref<16xf32>
    return
  }
}
