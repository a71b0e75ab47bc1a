"""Read the tables of a report page back (standard library HTML parser): per table id, its column
keys and, per row, each cell's text and sort value."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class ParsedTable:
    id: str
    classes: str
    keys: list[str] = field(default_factory=list)
    rows: list[list[tuple[str, str | None]]] = field(default_factory=list)
    sort: dict[str, str] = field(default_factory=dict)  # aria-sort per column key

    def column(self, key: str) -> list[tuple[str, str | None]]:
        i = self.keys.index(key)
        return [row[i] for row in self.rows]

    def row(self, first: str) -> dict[str, tuple[str, str | None]]:
        """The row whose first cell reads ``first``, by column key."""
        match = next(r for r in self.rows if r[0][0] == first)
        return dict(zip(self.keys, match, strict=True))


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, ParsedTable] = {}
        self.body: dict[str, str | None] = {}
        self._table: ParsedTable | None = None
        self._cell: list[str] | None = None
        self._cell_v: str | None = None
        self._row: list[tuple[str, str | None]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "table":
            self._table = ParsedTable(a.get("id") or "", a.get("class") or "")
            self.tables[self._table.id] = self._table
        elif self._table is None:
            return
        elif tag == "th":
            self._table.keys.append(a.get("data-key") or "")
            if a.get("aria-sort"):
                self._table.sort[a.get("data-key") or ""] = a["aria-sort"] or ""
        elif tag == "tr":
            self._row = []
        elif tag == "td":
            self._cell, self._cell_v = [], a.get("data-v")

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._row is not None:
            self._row.append(("".join(self._cell).strip(), self._cell_v))
            self._cell = None
        elif tag == "tr" and self._table is not None and self._row:
            self._table.rows.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None


def parse_page(html: str) -> tuple[dict[str, ParsedTable], dict[str, str | None]]:
    """(tables by id without the ``t-`` prefix, attributes of <body>)."""
    p = _Parser()
    p.feed(html)
    return {k.removeprefix("t-"): v for k, v in p.tables.items()}, p.body
