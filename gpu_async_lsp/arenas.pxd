# The C part of arenas.py in its Cython build (tools/compiled_build.py): an augmenting .pxd, so
# that the .py stays plain Python. CPython's object allocator takes its arenas (1 MiB each on
# 64-bit builds) from an arena allocator that can be replaced (PyObject_SetArenaAllocator,
# "Customize pymalloc Arena Allocator" in the C API docs); this one maps them as the default
# one does, with MAP_POPULATE: their pages are made in one system call, not one page fault
# each; it hands out a reserve of arenas mapped ahead of need first (`reserve_arenas`), and
# keeps freed ones for reuse up to the reserve's size. Only on Linux; elsewhere the
# functions say no and nothing changes.
cdef extern from *:
    """
    #if defined(__linux__) && !defined(Py_LIMITED_API)
    #include <sys/mman.h>
    /* Arenas mapped ahead of need (gpu_async_lsp_reserve_arenas) and freed ones kept for
       reuse, up to `keep`: handed out before any new mapping. Only blocks of the object
       allocator's arena size (obmalloc.c: 1 MiB on 64-bit builds) are held; the allocator is
       asked for others too (3.11: each thread's 16 KiB frame stack chunks), mapped and
       unmapped as they come. All calls but the mapping of the reserve run with the GIL held
       (the object allocator's rule). */
    #define GPU_ASYNC_LSP_RESERVE_MAX 256
    static void *gpu_async_lsp_held[GPU_ASYNC_LSP_RESERVE_MAX];
    static int gpu_async_lsp_held_count = 0;
    static int gpu_async_lsp_keep = 0;
    static const size_t gpu_async_lsp_arena_size = sizeof(void *) > 4 ? (size_t)1 << 20
                                                                      : (size_t)1 << 18;

    static void *gpu_async_lsp_mapped(size_t size) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    static void gpu_async_lsp_drop_reserve(void) {
        while (gpu_async_lsp_held_count > 0) {
            gpu_async_lsp_held_count--;
            munmap(gpu_async_lsp_held[gpu_async_lsp_held_count], gpu_async_lsp_arena_size);
        }
        gpu_async_lsp_keep = 0;
    }
    static void *gpu_async_lsp_populated_arena(void *ctx, size_t size) {
        (void)ctx;
        if (size == gpu_async_lsp_arena_size && gpu_async_lsp_held_count > 0)
            return gpu_async_lsp_held[--gpu_async_lsp_held_count];
        return gpu_async_lsp_mapped(size);
    }
    static void gpu_async_lsp_unmapped_arena(void *ctx, void *ptr, size_t size) {
        (void)ctx;
        if (size == gpu_async_lsp_arena_size && gpu_async_lsp_held_count < gpu_async_lsp_keep) {
            gpu_async_lsp_held[gpu_async_lsp_held_count++] = ptr;
            return;
        }
        munmap(ptr, size);
    }
    static int gpu_async_lsp_reserve_arenas(int count) {
        /* A few at a time, each few held as soon as it is mapped: an analysis that starts
           meanwhile takes them as they come. */
        void *fresh[4];
        size_t size = gpu_async_lsp_arena_size;
        int made, i;
        if (count > GPU_ASYNC_LSP_RESERVE_MAX)
            count = GPU_ASYNC_LSP_RESERVE_MAX;
        if (count > gpu_async_lsp_keep)
            gpu_async_lsp_keep = count;
        while (gpu_async_lsp_held_count < count) {
            made = 0;
            Py_BEGIN_ALLOW_THREADS  /* the kernel makes the pages; the process goes on */
            while (made < 4) {
                void *p = gpu_async_lsp_mapped(size);
                if (p == NULL)
                    break;
                fresh[made++] = p;
            }
            Py_END_ALLOW_THREADS
            for (i = 0; i < made; i++) {
                if (gpu_async_lsp_held_count < gpu_async_lsp_keep)
                    gpu_async_lsp_held[gpu_async_lsp_held_count++] = fresh[i];
                else
                    munmap(fresh[i], size);
            }
            if (made < 4 || gpu_async_lsp_keep < count)
                break;  /* no memory, or the reserve was dropped meanwhile */
        }
        return gpu_async_lsp_held_count;
    }
    static int gpu_async_lsp_populate_arenas(void) {
        PyObjectArenaAllocator allocator = {NULL, gpu_async_lsp_populated_arena,
                                            gpu_async_lsp_unmapped_arena};
        PyObject_SetArenaAllocator(&allocator);
        return 1;
    }
    #else
    static int gpu_async_lsp_populate_arenas(void) { return 0; }
    static int gpu_async_lsp_reserve_arenas(int count) { (void)count; return 0; }
    static void gpu_async_lsp_drop_reserve(void) {}
    #endif
    """
    int _populate_arenas "gpu_async_lsp_populate_arenas"() noexcept
    int _reserve_arenas "gpu_async_lsp_reserve_arenas"(int count) noexcept
    void _drop_reserve "gpu_async_lsp_drop_reserve"() noexcept
