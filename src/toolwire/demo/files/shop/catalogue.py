"""Product pages: which picture a product shows."""

PLACEHOLDER_IMAGE = "images/mug.svg"  # shown when a product has no picture of its own


def picture(paths: list[str]) -> str:
    """The first of a product's pictures, or the placeholder."""
    return paths[0] if paths else PLACEHOLDER_IMAGE
