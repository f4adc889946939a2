"""Protocol layer: the language server. `main(argv)` is `gpu-async-lsp serve`.

Nothing but the protocol goes to stdout; logs go to stderr or `--log-file`. Only this package
(and the CLI that starts it) imports pygls and lsprotocol.
"""

from __future__ import annotations

import argparse
import sys
import threading

from gpu_async_lsp.options import HelpFormatter


def build_arg_parser(add_help: bool = True) -> argparse.ArgumentParser:
    """The options of `gpu-async-lsp serve` (importing this module does not import pygls)."""
    p = argparse.ArgumentParser(prog="gpu-async-lsp serve", add_help=add_help,
                                description="Serve the Language Server Protocol.",
                                formatter_class=HelpFormatter)
    p.add_argument("--stdio", action="store_true", help="serve over stdin/stdout (the default)")
    p.add_argument("--tcp", action="store_true", help="serve one TCP client")
    p.add_argument("--host", default="127.0.0.1", help="TCP host (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=2087, help="TCP port (default 2087)")
    p.add_argument("--log-file", help="write logs to this file instead of stderr")
    p.add_argument("--log-level", default="WARNING",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
                   type=str.upper, help="log level (default WARNING)")
    return p


# For a person who started the server in a terminal (an editor gives it a pipe).
TTY_NOTICE = ("gpu-async-lsp: a language server, waiting for LSP messages on stdin "
              "(Ctrl-D or Ctrl-C stops it); to check files: gpu-async-lsp check --help")


def tty_notice(stdin) -> str | None:
    """TTY_NOTICE when `stdin` is a terminal, else None."""
    try:
        return TTY_NOTICE if stdin.isatty() else None
    except (AttributeError, ValueError):  # no stdin, or a closed one
        return None


def main(argv: list[str] | None = None) -> int:
    args = build_arg_parser().parse_args(argv)
    notice = None if args.tcp else tty_notice(sys.stdin)
    if notice is not None:  # it still serves: an editor may start it with a terminal as stdin
        print(notice, file=sys.stderr, flush=True)
    import logging  # here: `check`, which builds this parser too, logs nothing

    handler: logging.Handler = (logging.FileHandler(args.log_file, encoding="utf-8")
                                if args.log_file else logging.StreamHandler(sys.stderr))
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(args.log_level)

    from gpu_async_lsp import arenas, parallel, regex_cache
    from gpu_async_lsp.server.heap import HEAP_RESERVE, prepare_heap, reserve_heap

    # Before anything big is made: a first open's objects then come on pages made at once,
    # its big blocks from a heap the process keeps (heap.py).
    arenas.populate_arenas()
    heap_prepared = prepare_heap()
    from gpu_async_lsp.server.handlers import build_server
    from gpu_async_lsp.syntax import build_parser_once

    server = build_server()
    # Lark and its parser, before the first document: a first open (and the process it forks
    # to share a big one) then finds them made; so does the forked process's set-up.
    build_parser_once()
    parallel.prepare_forks()
    regex_cache.save()  # the patterns compiled so far, for the next start
    # The first document's memory (its objects' arenas, its heap) made resident while the
    # client and the server greet each other (a thread of its own, on another CPU where
    # there is one: arenas.py, heap.py).
    def reserve_memory():
        # One stretch without the GIL where the build has the allocator (arenas.py); else
        # the heap alone, through ctypes.
        if not arenas.reserve_arenas(heap_bytes=HEAP_RESERVE if heap_prepared else 0):
            reserve_heap()

    threading.Thread(target=reserve_memory, name="memory reserve", daemon=True).start()
    if args.tcp:
        server.start_tcp(args.host, args.port)
    else:
        server.start_io()
    # The client is gone (its end of the pipe closed) without `exit`: end now, as `exit` does
    # (LSP 3.17: status 1 without a prior `shutdown`), without waiting for a running analysis.
    from gpu_async_lsp.server.protocol import exit_now

    exit_now(0 if server.protocol._shutdown else 1)
    return 1
