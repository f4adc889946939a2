// harness: --semantics sync-only
// The two chains of llvm22_two_chains, rewritten in sync-only semantics: the synchronous
// copies and deallocs are threaded, the hand-written chains stay apart (LLVM 22's pass
// makes the second wait for the first).
module attributes {gpu.container_module} {
  func.func private @printMemrefF32(memref<*xf32>)

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %two = arith.constant 2.0 : f32
    %host_a = memref.alloc() : memref<8xf32>
    %host_b = memref.alloc() : memref<8xf32>
    scf.for %i = %c0 to %c8 step %c1 {
      memref.store %zero, %host_a[%i] : memref<8xf32>
      memref.store %zero, %host_b[%i] : memref<8xf32>
    }
    %s0 = gpu.wait async
    %s1 = gpu.wait async
    %a, %ta = gpu.alloc async [%s0] () : memref<8xf32>
    %b, %tb = gpu.alloc async [%s1] () : memref<8xf32>
    %ta2 = gpu.memset async [%ta] %a, %one : memref<8xf32>, f32
    %tb2 = gpu.memset async [%tb] %b, %two : memref<8xf32>, f32
    gpu.wait [%ta2, %tb2]
    gpu.memcpy %host_a, %a : memref<8xf32>, memref<8xf32>
    gpu.memcpy %host_b, %b : memref<8xf32>, memref<8xf32>
    gpu.dealloc %a : memref<8xf32>
    gpu.dealloc %b : memref<8xf32>
    %printed_a = memref.cast %host_a : memref<8xf32> to memref<*xf32>
    call @printMemrefF32(%printed_a) : (memref<*xf32>) -> ()
    %printed_b = memref.cast %host_b : memref<8xf32> to memref<*xf32>
    call @printMemrefF32(%printed_b) : (memref<*xf32>) -> ()
    memref.dealloc %host_a : memref<8xf32>
    memref.dealloc %host_b : memref<8xf32>
    return
  }
}
