// A `gpu.alloc host_shared` buffer, written and read by the host and copied to and from the
// device. The host_shared alloc must stay synchronous after the rewrite (LLVM 22 lowers it
// only so).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @negate(%buf: memref<8xf32>) kernel {
      %i = gpu.thread_id x
      %x = memref.load %buf[%i] : memref<8xf32>
      %y = arith.negf %x : f32
      memref.store %y, %buf[%i] : memref<8xf32>
      gpu.return
    }
  }

  func.func private @printMemrefF32(memref<*xf32>)

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %shared = gpu.alloc host_shared () : memref<8xf32>
    scf.for %i = %c0 to %c8 step %c1 {
      %i_i32 = arith.index_cast %i : index to i32
      %x = arith.sitofp %i_i32 : i32 to f32
      memref.store %x, %shared[%i] : memref<8xf32>
    }
    %dev = gpu.alloc () : memref<8xf32>
    gpu.memcpy %dev, %shared : memref<8xf32>, memref<8xf32>
    gpu.launch_func @kernels::@negate blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1)
        args(%dev : memref<8xf32>)
    gpu.memcpy %shared, %dev : memref<8xf32>, memref<8xf32>
    gpu.dealloc %dev : memref<8xf32>
    %printed = memref.cast %shared : memref<8xf32> to memref<*xf32>
    call @printMemrefF32(%printed) : (memref<*xf32>) -> ()
    gpu.dealloc %shared : memref<8xf32>
    return
  }
}
