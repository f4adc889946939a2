// harness: --semantics llvm22
// A loop whose body is threaded by hand up to a synchronous copy: each iteration clears a
// device buffer on a fresh stream, copies it to the host and waits for the memset's token.
module attributes {gpu.container_module} {
  func.func private @printMemrefF32(memref<*xf32>)

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %host = memref.alloc() : memref<8xf32>
    scf.for %i = %c0 to %c8 step %c1 {
      memref.store %zero, %host[%i] : memref<8xf32>
    }
    %t0 = gpu.wait async
    %dev, %t1 = gpu.alloc async [%t0] () : memref<8xf32>
    gpu.wait [%t1]
    scf.for %i = %c0 to %c4 step %c1 {
      %i_i32 = arith.index_cast %i : index to i32
      %value = arith.sitofp %i_i32 : i32 to f32
      %stream = gpu.wait async
      %cleared = gpu.memset async [%stream] %dev, %value : memref<8xf32>, f32
      gpu.memcpy %host, %dev : memref<8xf32>, memref<8xf32>
      gpu.wait [%cleared]
    }
    gpu.dealloc %dev : memref<8xf32>
    %printed = memref.cast %host : memref<8xf32> to memref<*xf32>
    call @printMemrefF32(%printed) : (memref<*xf32>) -> ()
    memref.dealloc %host : memref<8xf32>
    return
  }
}
