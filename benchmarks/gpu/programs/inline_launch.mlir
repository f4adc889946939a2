// harness: --thread-launch
// An inline `gpu.launch` between synchronous memory ops: the rewrite threads the token through
// the launch (its body stays as written) and gpu-kernel-outlining outlines it when lowering.
func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %seven = arith.constant 7.0 : f32
  %minus_one = arith.constant -1.0 : f32
  %host = memref.alloc() : memref<12xf32>
  scf.for %i = %c0 to %c12 step %c1 {
    memref.store %minus_one, %host[%i] : memref<12xf32>
  }
  %dev = gpu.alloc () : memref<12xf32>
  gpu.memset %dev, %seven : memref<12xf32>, f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c12, %sy = %c1, %sz = %c1) {
    %x = memref.load %dev[%tx] : memref<12xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %dev[%tx] : memref<12xf32>
    gpu.terminator
  }
  gpu.memcpy %host, %dev : memref<12xf32>, memref<12xf32>
  gpu.dealloc %dev : memref<12xf32>
  %printed = memref.cast %host : memref<12xf32> to memref<*xf32>
  call @printMemrefF32(%printed) : (memref<*xf32>) -> ()
  memref.dealloc %host : memref<12xf32>
  return
}
