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
UTCNOW = (
    "/srv/shop/shop/report.py:40: DeprecationWarning: datetime.datetime.utcnow() is deprecated"
    " and scheduled for removal in a future version."
)

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
CREATE TABLE categories (
    id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES categories(id), name TEXT NOT NULL
);
CREATE TABLE product_categories (
    product_id INTEGER NOT NULL REFERENCES products(id),
    category_id INTEGER NOT NULL REFERENCES categories(id),
    PRIMARY KEY (product_id, category_id)
);
CREATE TABLE product_images (
    id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL REFERENCES products(id),
    path TEXT NOT NULL, alt_text TEXT
);
CREATE TABLE record_history (
    id INTEGER PRIMARY KEY, table_name TEXT NOT NULL, record_id INTEGER NOT NULL,
    field TEXT NOT NULL, old_value TEXT, new_value TEXT, changed_by TEXT, changed_at TEXT NOT NULL
);
CREATE TABLE roles (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, description TEXT);
CREATE TABLE staff (
    id INTEGER PRIMARY KEY, username TEXT NOT NULL UNIQUE, display_name TEXT, email TEXT,
    role_id INTEGER REFERENCES roles(id), password_hash TEXT NOT NULL, mfa_secret TEXT,
    active INTEGER NOT NULL, last_login TEXT, phone TEXT, notes TEXT
);
CREATE TABLE scheduled_jobs (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, schedule TEXT NOT NULL, command TEXT NOT NULL,
    enabled INTEGER NOT NULL
);
"""
# (parent, name): a small catalogue tree, three levels deep
CATEGORIES = (
    (None, "All products"), (1, "Kitchen"), (2, "Mugs"), (1, "Clothing"), (4, "T-shirts"),
    (1, "Stationery"), (6, "Pens"), (1, "Bags"),
)  # fmt: skip
PRODUCT_CATEGORIES = ((1, 3), (2, 5), (3, 8), (4, 7))
# (product, path in the files folder, alt text): one missing, one outside, one a URL
PRODUCT_IMAGES = (
    (1, "images/mug.svg", "Enamel mug"), (2, "images/tee.jpg", "Organic T-shirt"),
    (3, "../private/tote.png", "Canvas tote"), (4, "/images/pen.svg", "Fountain pen"),
    (4, "https://cdn.shop.example/pen-side.jpg", "Fountain pen, side"),
)  # fmt: skip
# (table, record, field, old, new, by, at): the audit trail the shop's admin screens write
HISTORY = (
    ("customers", 1, "city", "Paris", "London", "grace@example.com", "2026-02-01 09:30:00"),
    ("customers", 1, "password_hash", CUSTOMERS[0][3][:-2] + "00", CUSTOMERS[0][3],
     "ada@example.com", "2026-02-11 18:02:44"),
    ("products", 2, "price_cents", "2200", "2500", "grace@example.com", "2026-02-20 11:00:00"),
    ("customers", 1, "email", "ada@old.example", "ada@example.com", "ada@example.com",
     "2026-03-02 08:15:10"),
)  # fmt: skip
ROLES = (("admin", "Everything"), ("editor", "Products and orders"), ("support", "Read only"))
# (username, display name, e-mail, role, password hash, MFA secret, active, last login,
#  phone, notes)
STAFF = (
    ("grace", "Grace Hopper", "grace@example.com", 1,
     "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$c3RhZmZoYXNoMQ", "JBSWY3DPEHPK3PXP", 1,
     "2026-03-09 10:02:40", "+1 555 0100", "Owner"),
    ("linus", "Linus", "linus@example.com", 2,
     "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$c3RhZmZoYXNoMg", "KRSXG5CTMVRXEZLU", 1, None,
     None, "Edits the catalogue"),
    ("old-intern", "Former intern", "intern@example.com", 3,
     "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$c3RhZmZoYXNoMw", None, 0, "2025-08-30 16:00:00",
     None, "Left in August"),
)  # fmt: skip
JOB_TOKEN = "ghp_" + "R3p0rtT0k3n" * 3 + "abc"  # fake, shaped like a GitHub token
JOBS = (
    ("nightly report", "0 2 * * *", f"python -m shop.report --token {JOB_TOKEN}", 1),
    ("stock sync", "*/15 * * * *", "python -m shop.stock sync", 1),
    ("old newsletter", "0 9 * * 1", "python -m shop.newsletter", 0),
)


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
        _write_catalogue_and_staff(db)
    db.close()


def _write_catalogue_and_staff(db: sqlite3.Connection) -> None:
    db.executemany("INSERT INTO categories (parent_id, name) VALUES (?, ?)", CATEGORIES)
    db.executemany("INSERT INTO product_categories VALUES (?, ?)", PRODUCT_CATEGORIES)
    db.executemany(
        "INSERT INTO product_images (product_id, path, alt_text) VALUES (?, ?, ?)", PRODUCT_IMAGES
    )
    db.executemany(
        "INSERT INTO record_history (table_name, record_id, field, old_value, new_value,"
        " changed_by, changed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        HISTORY,
    )
    db.executemany("INSERT INTO roles (name, description) VALUES (?, ?)", ROLES)
    db.executemany(
        "INSERT INTO staff (username, display_name, email, role_id, password_hash, mfa_secret,"
        " active, last_login, phone, notes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        STAFF,
    )
    db.executemany(
        "INSERT INTO scheduled_jobs (name, schedule, command, enabled) VALUES (?, ?, ?, ?)", JOBS
    )


def write_env(path: Path) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in ENV_SECRETS.items()))


def write_log(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    ada, grace = CUSTOMERS[0], CUSTOMERS[1]
    path.write_text(
        f"2026-03-09 09:58:01 WARNING {UTCNOW}\n"
        "2026-03-09 09:58:02 WARNING /srv/shop/shop/stock.py:12: PendingDeprecationWarning:"
        f" the 'sync' command will be removed; use 'refresh' (token={ada[4]})\n"
        f"2026-03-09 10:00:30 WARNING {UTCNOW}\n"
        "2026-03-09 10:00:45 WARNING shop.payments: the v1 checkout endpoint is deprecated;"
        " move to /v2/checkout by 2026-06-30\n"
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
