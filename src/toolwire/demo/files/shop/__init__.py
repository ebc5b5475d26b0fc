"""A tiny shop: carts, prices and checkout."""
