"""IDE layer: the analysis of open documents and what editor features find in it.

Between the syntax and analysis layers below and the protocol above (the way rust-analyzer's
`ide` crate sits under its LSP server, and MLIR's `MLIRServer.cpp` under `LSPServer.cpp`):

- `units`: the values (a unit's result, a document's analysis) and the analysis of one unit;
- `host`: the `Analyzer`: documents split into units, each analysed once and moved along with
  edits;
- `sharing`: a big first open shared with a forked process;
- `cache`: the unit results, bounded by what is open;
- `features`: symbols, folding, navigation, hover, inlay hints and code lenses, as plain values
  at offsets.

It speaks offsets and plain values only: no pygls, no lsprotocol (tests/unit/test_packaging.py
checks the imports).
"""
