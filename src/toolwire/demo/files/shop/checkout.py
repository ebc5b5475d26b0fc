"""Checkout: turns a cart into an order row."""

import sqlite3

from .cart import Cart


def place_order(db: sqlite3.Connection, customer_id: int, cart: Cart) -> int:
    cursor = db.execute(
        "INSERT INTO orders (customer_id, status, total_cents) VALUES (?, 'placed', ?)",
        (customer_id, cart.total_cents()),
    )
    order_id = int(cursor.lastrowid or 0)
    for line in cart.lines:
        db.execute(
            "INSERT INTO order_lines (order_id, product_id, quantity, unit_price_cents)"
            " SELECT ?, id, ?, ? FROM products WHERE sku = ?",
            (order_id, line.quantity, line.unit_price_cents, line.sku),
        )
    return order_id
