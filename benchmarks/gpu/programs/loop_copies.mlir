// Many small steps, for timing on a GPU: 256 times a memset of a 64 Ki-float buffer, a
// kernel that scales it, and a copy back to the host, whose first element the host adds up.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%buf: memref<65536xf32>, %factor: f32) kernel {
      %bx = gpu.block_id x
      %tx = gpu.thread_id x
      %c256 = arith.constant 256 : index
      %base = arith.muli %bx, %c256 : index
      %i = arith.addi %base, %tx : index
      %x = memref.load %buf[%i] : memref<65536xf32>
      %y = arith.mulf %x, %factor : f32
      memref.store %y, %buf[%i] : memref<65536xf32>
      gpu.return
    }
  }

  func.func private @printF32(f32)
  func.func private @printNewline()

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %zero = arith.constant 0.0 : f32
    %two = arith.constant 2.0 : f32
    %host = memref.alloc() : memref<65536xf32>
    %dev = gpu.alloc () : memref<65536xf32>
    %sum = scf.for %step = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> (f32) {
      %step_i32 = arith.index_cast %step : index to i32
      %value = arith.sitofp %step_i32 : i32 to f32
      gpu.memset %dev, %value : memref<65536xf32>, f32
      gpu.launch_func @kernels::@scale blocks in (%c256, %c1, %c1) threads in (%c256, %c1, %c1)
          args(%dev : memref<65536xf32>, %two : f32)
      gpu.memcpy %host, %dev : memref<65536xf32>, memref<65536xf32>
      %first = memref.load %host[%c0] : memref<65536xf32>
      %next = arith.addf %acc, %first : f32
      scf.yield %next : f32
    }
    gpu.dealloc %dev : memref<65536xf32>
    call @printF32(%sum) : (f32) -> ()
    call @printNewline() : () -> ()
    memref.dealloc %host : memref<65536xf32>
    return
  }
}
