"""Reading report.html in tests: an element's text by id, and the cells of the rows a table marks
with a data attribute (`<tr data-official="overall:all">`)."""

import re
from html import unescape


def text(html: str) -> str:
    """The text of an HTML fragment: tags dropped, entities decoded, stripped."""
    return unescape(re.sub(r"<[^>]+>", "", html)).strip()


def element_text(page: str, element_id: str) -> str | None:
    """The text of the element with this id, None when there is none."""
    found = re.search(rf'<(\w+)[^>]* id="{element_id}"[^>]*>(.*?)</\1>', page, re.S)
    return text(found.group(2)) if found else None


def marked_rows(page: str, attribute: str) -> dict[str, list[str]]:
    """The cells' texts of each `<tr ATTRIBUTE="...">`, by that value."""
    rows = re.findall(rf'<tr {attribute}="([^"]+)">(.*?)</tr>', page, re.S)
    return {key: [text(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)] for key, row in rows}
