/* The executable's entry point. The lowered program's `func.func @main()` returns nothing, so
 * the harness renames it `_mlir_main` (llvm-objcopy --redefine-sym) and this main, which calls
 * it, gives the process a defined exit status. */

void _mlir_main(void);

int main(void) {
  _mlir_main();
  return 0;
}
