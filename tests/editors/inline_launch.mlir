// One host function, @f, with an inline gpu.launch (not outlined) among synchronous GPU ops.
// By default the gpu.launch is a launch-not-outlined warning; its quick fix threads the token
// through the gpu.launch line as through any async op and leaves the kernel body as it is.
module attributes {gpu.container_module} {
  func.func @f(%n: index, %h: memref<?xf32>) {
    %d = gpu.alloc (%n) : memref<?xf32>
    gpu.memcpy %d, %h : memref<?xf32>, memref<?xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n)
               threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {
      %v = memref.load %d[%tx] : memref<?xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %d[%tx] : memref<?xf32>
      gpu.terminator
    }
    gpu.memcpy %h, %d : memref<?xf32>, memref<?xf32>
    gpu.dealloc %d : memref<?xf32>
    return
  }
}
