# The C part of arenas.py in its Cython build (tools/compiled_build.py): an augmenting .pxd, so
# that the .py stays plain Python. CPython's object allocator takes its arenas (1 MiB each on
# 64-bit builds) from an arena allocator that can be replaced (PyObject_SetArenaAllocator,
# "Customize pymalloc Arena Allocator" in the C API docs); this one maps them as the default
# one does, with MAP_POPULATE: their pages are made in one system call, not one page fault
# each. Only on Linux; elsewhere the function says no and nothing changes.
cdef extern from *:
    """
    #if defined(__linux__) && !defined(Py_LIMITED_API)
    #include <sys/mman.h>
    static void *gpu_async_lsp_populated_arena(void *ctx, size_t size) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        (void)ctx;
        return p == MAP_FAILED ? NULL : p;
    }
    static void gpu_async_lsp_unmapped_arena(void *ctx, void *ptr, size_t size) {
        (void)ctx;
        munmap(ptr, size);
    }
    static int gpu_async_lsp_populate_arenas(void) {
        PyObjectArenaAllocator allocator = {NULL, gpu_async_lsp_populated_arena,
                                            gpu_async_lsp_unmapped_arena};
        PyObject_SetArenaAllocator(&allocator);
        return 1;
    }
    #else
    static int gpu_async_lsp_populate_arenas(void) { return 0; }
    #endif
    """
    int _populate_arenas "gpu_async_lsp_populate_arenas"() noexcept
