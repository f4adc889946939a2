"""Protocol layer: the server's state per open document, in one map.

pygls's workspace keeps each document's text and version (document sync is the library's);
everything this server adds per document lives on its `DocState`: the line index of the
current text (for applying changes), the current analysis and the line index of its text, the
scheduling flags of its analysis, whether it is MLIR at all, whether the server lost sync with
the client, what requests cached for the current version, and the values of its configuration
file. Closing a document drops its state whole, and with it everything the document held.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from gpu_async_lsp.config import DEFAULTS, Config
from gpu_async_lsp.ide.units import DocumentAnalysis
from gpu_async_lsp.text import LineIndex


@dataclass
class DocState:
    uri: str
    mlir: bool = True  # a document of another language gets no findings
    text_index: LineIndex | None = None  # of the current text (pygls's document), once made
    analysis: DocumentAnalysis | None = None
    index: LineIndex | None = None  # of analysis.text
    running: bool = False
    dirty: bool = False
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    out_of_sync: str | None = None  # why the server's text may differ from the client's
    told_replaced_bytes: bool = False
    failed_version: int | None = None  # the analysis of this version raised (a bug)
    fix_all: tuple | None = None  # (analysis, (encoding, documentChanges), edit as JSON values)
    file_config: Config = DEFAULTS  # of its configuration file (config.py), read at open

    def line_index(self) -> LineIndex:
        if self.index is None or self.index.text is not self.analysis.text:
            self.index = LineIndex(self.analysis.text)
        return self.index


class Documents:
    """uri -> DocState of every open document."""

    def __init__(self):
        self._states: dict[str, DocState] = {}

    def opened(self, uri: str) -> DocState:
        # The text's line index is made by the first analysis (off the event loop) or the
        # first change, whichever comes first: not here, where it held up the first
        # analysis of a 50k-line file by 30 ms.
        state = self._states[uri] = DocState(uri)
        return state

    def get(self, uri: str) -> DocState | None:
        return self._states.get(uri)

    def closed(self, uri: str) -> DocState | None:
        return self._states.pop(uri, None)

    def __iter__(self):
        return iter(list(self._states.values()))

    def __len__(self) -> int:
        return len(self._states)
