"""Radio buttons and checklists whose state shows without colour.

Textual draws every radio as ``▐●▌`` and every checklist box as ``▐X▌``, telling on from off by colour alone:
with ``NO_COLOR`` or on a monochrome terminal every choice looked picked. Here the mark itself says it (``●`` /
blank, ``X`` / blank), and without colour the highlighted choice is drawn in reverse video too.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.content import Content
from textual.strip import Strip
from textual.widgets import RadioButton, SelectionList


class Radio(RadioButton):
    """A radio button whose mark is ``●`` when on and blank when off."""

    DEFAULT_CSS = """
    RadioSet:nocolor:focus > Radio.-selected > .toggle--label { text-style: bold reverse; }
    RadioSet:nocolor:blur > Radio.-selected > .toggle--label { text-style: underline; }
    """

    @property
    def _button(self) -> Content:
        button = super()._button
        if self.value:
            return button
        left, right = len(self.BUTTON_LEFT), len(self.BUTTON_INNER)
        return (
            button[:left]
            + Content(" " * right).stylize(self.get_visual_style("toggle--button"))
            + button[left + right :]
        )


class Checklist(SelectionList[str]):
    """A selection list whose boxes are ``X`` when picked and blank when not (its highlight: ``app.tcss``)."""

    def render_line(self, y: int) -> Strip:
        line = super().render_line(y)
        index = self.scroll_offset.y + y
        if index >= self.option_count or self.get_option_at_index(index).value in self._selected:
            return line
        segments = list(line)
        if len(segments) > 1 and segments[1].text == "X":  # [left half, mark, right half, gap, prompt...]
            segments[1] = Segment(" ", segments[1].style, segments[1].control)
        return Strip(segments, line.cell_length)
