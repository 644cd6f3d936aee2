"""A trace as a self-contained SVG sequence diagram (no fonts, scripts or links to fetch).

Columns are the participants of the text diagram (w1.., b1.., zk); each arrow is a row, a lost
message is dashed with a cross at its end, a note to oneself is a small loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

from model.bookkeeper.actions import Label
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import State
from model.bookkeeper.render import diagram_arrows, participants
from model.search.bfs import Step

COLUMN = 150
ROW = 28
TOP = 70
MARGIN = 60


def sequence_svg(
    cfg: ModelConfig,
    trace: Sequence[Step[State, Label]],
    *,
    title: str = "",
    final_note: str | None = None,
) -> str:
    names = participants(cfg)
    x = {name: MARGIN + i * COLUMN for i, name in enumerate(names)}
    arrows = diagram_arrows(trace)
    rows = len(arrows) + (1 if final_note else 0)
    width = MARGIN * 2 + COLUMN * (len(names) - 1) + 120
    height = TOP + ROW * (rows + 1) + 20
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="11">',
        '<defs><marker id="head" markerWidth="8" markerHeight="8" refX="8" refY="4" '
        'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#222"/></marker></defs>',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{MARGIN}" y="20" font-size="13" font-weight="bold">{escape(title)}</text>',
    ]
    bottom = height - 10
    for name in names:
        out.append(
            f'<line x1="{x[name]}" y1="{TOP - 10}" x2="{x[name]}" y2="{bottom}" '
            'stroke="#999" stroke-dasharray="2,3"/>'
        )
        out.append(
            f'<rect x="{x[name] - 22}" y="{TOP - 38}" width="44" height="22" rx="4" '
            'fill="#eef" stroke="#447"/>'
        )
        out.append(f'<text x="{x[name]}" y="{TOP - 23}" text-anchor="middle">{escape(name)}</text>')
    for row, arrow in enumerate(arrows, start=1):
        y = TOP + row * ROW
        colour = "#b22" if arrow.lost else "#222"
        dash = ' stroke-dasharray="5,4"' if arrow.lost else ""
        x1, x2 = x[arrow.source], x[arrow.target]
        if x1 == x2:
            out.append(
                f'<path d="M{x1},{y - 8} h24 v12 h-24" fill="none" stroke="{colour}"{dash}/>'
            )
            out.append(f'<text x="{x1 + 30}" y="{y}" fill="{colour}">{escape(arrow.text)}</text>')
            continue
        end = x2 - (12 if x2 > x1 else -12) if arrow.lost else x2
        marker = "" if arrow.lost else ' marker-end="url(#head)"'
        out.append(
            f'<line x1="{x1}" y1="{y}" x2="{end}" y2="{y}" stroke="{colour}"{dash}{marker}/>'
        )
        if arrow.lost:
            out.append(
                f'<path d="M{end - 5},{y - 5} l10,10 M{end - 5},{y + 5} l10,-10" '
                f'stroke="{colour}" stroke-width="2"/>'
            )
        out.append(
            f'<text x="{(x1 + x2) / 2}" y="{y - 4}" text-anchor="middle" fill="{colour}">'
            f"{escape(arrow.text)}</text>"
        )
    if final_note:
        y = TOP + rows * ROW
        out.append(
            f'<rect x="{MARGIN - 20}" y="{y - 14}" width="{width - 2 * MARGIN + 40}" height="20" '
            'fill="#fdd" stroke="#b22"/>'
        )
        out.append(
            f'<text x="{width / 2}" y="{y}" text-anchor="middle" font-weight="bold">'
            f"{escape(final_note)}</text>"
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"
