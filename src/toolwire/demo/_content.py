"""The demo's generated content: the shop database, the ``.env`` file and the application log.

Every secret here is fake and shaped like a real one, so redaction and refusal can be seen.
``CUSTOMERS`` lists the secrets, so that tests can check none of them ever leaves a tool.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

# (name, e-mail, city, password hash, API token)
CUSTOMERS = (
    ("Ada Lovelace", "ada@example.com", "London",
     "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$ZmFrZWhhc2gwMQ", "tok_live_7Hq2vX9pLm3N"),
    ("Grace Hopper", "grace@example.com", "Arlington",
     "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$ZmFrZWhhc2gwMg", "tok_live_K8sD4fG6hJ1Z"),
    ("Alan Turing", "alan@example.com", "Wilmslow",
     "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$ZmFrZWhhc2gwMw", "tok_live_Q5wE7rT9yU2I"),
    ("Katherine Johnson", "katherine@example.com", "Hampton",
     "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$ZmFrZWhhc2gwNA", "tok_live_Z3xC5vB7nM4A"),
)  # fmt: skip
PRODUCTS = (
    ("MUG-01", "Enamel mug", 1200, 40),
    ("TEE-02", "Organic T-shirt", 2500, 15),
    ("BAG-03", "Canvas tote", 1800, 0),
    ("PEN-04", "Fountain pen", 4500, 7),
)
ORDERS = ((1, "2026-03-01", "shipped"), (2, "2026-03-04", "placed"), (1, "2026-03-09", "placed"))
ORDER_LINES = ((1, 1, 2, 1200), (1, 4, 1, 4500), (2, 2, 3, 2500), (3, 3, 12, 1800))
ENV_SECRETS = {
    "DATABASE_URL": "postgresql://shop:Sup3rS3cret@db.internal:5432/shop",
    "STRIPE_SECRET_KEY": "sk_live_51Hdemo0000fakeKEYabcdef",
    "MAIL_PASSWORD": "correct-horse-battery-staple",
}
LOG_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIyIn0.c2lnbmF0dXJl"

_SCHEMA = """
CREATE TABLE customers (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, city TEXT,
    password_hash TEXT NOT NULL, api_token TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE TABLE products (
    id INTEGER PRIMARY KEY, sku TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
    price_cents INTEGER NOT NULL, stock INTEGER NOT NULL
);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
    placed_at TEXT NOT NULL, status TEXT NOT NULL
);
CREATE TABLE order_lines (
    id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL REFERENCES orders(id),
    product_id INTEGER NOT NULL REFERENCES products(id), quantity INTEGER NOT NULL,
    unit_price_cents INTEGER NOT NULL
);
CREATE TABLE sessions (id INTEGER PRIMARY KEY, customer_id INTEGER, session_token TEXT);
"""


def write_database(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.executescript(_SCHEMA)
        db.executemany(
            "INSERT INTO customers (name, email, city, password_hash, api_token, created_at)"
            " VALUES (?, ?, ?, ?, ?, '2026-01-15')",
            CUSTOMERS,
        )
        db.executemany(
            "INSERT INTO products (sku, name, price_cents, stock) VALUES (?, ?, ?, ?)", PRODUCTS
        )
        db.executemany(
            "INSERT INTO orders (customer_id, placed_at, status) VALUES (?, ?, ?)", ORDERS
        )
        db.executemany(
            "INSERT INTO order_lines (order_id, product_id, quantity, unit_price_cents)"
            " VALUES (?, ?, ?, ?)",
            ORDER_LINES,
        )
        db.execute("INSERT INTO sessions (customer_id, session_token) VALUES (1, 'sess_9f8e7d6c')")
    db.close()


def write_env(path: Path) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in ENV_SECRETS.items()))


def write_log(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    ada, grace = CUSTOMERS[0], CUSTOMERS[1]
    path.write_text(
        f"2026-03-09 10:01:12 INFO login ok for {ada[1]}\n"
        f"2026-03-09 10:01:13 INFO api call with token={ada[4]}\n"
        f"2026-03-09 10:02:40 INFO login ok for {grace[1]}\n"
        f"2026-03-09 10:02:41 INFO Authorization: Bearer {LOG_JWT}\n"
        "2026-03-09 10:03:05 ERROR checkout failed\n"
        "Traceback (most recent call last):\n"
        '  File "shop/checkout.py", line 10, in place_order\n'
        "    cursor = db.execute(\n"
        "sqlite3.IntegrityError: NOT NULL constraint failed: orders.total_cents"
        f" (customer {grace[1]})\n"
        "2026-03-09 10:03:06 INFO retry scheduled\n"
    )
