"""Shopping cart totals."""

from dataclasses import dataclass, field

VOLUME_DISCOUNT_THRESHOLD = 10  # items; larger carts get the volume discount
VOLUME_DISCOUNT_PERCENT = 5


@dataclass
class Line:
    sku: str
    quantity: int
    unit_price_cents: int


@dataclass
class Cart:
    lines: list[Line] = field(default_factory=list)

    def add(self, sku: str, quantity: int, unit_price_cents: int) -> None:
        self.lines.append(Line(sku, quantity, unit_price_cents))

    def item_count(self) -> int:
        return sum(line.quantity for line in self.lines)

    def subtotal_cents(self) -> int:
        return sum(line.quantity * line.unit_price_cents for line in self.lines)

    def total_cents(self) -> int:
        subtotal = self.subtotal_cents()
        # BUG: the discount should apply from the threshold on (>=), and it is
        # computed on the already discounted amount for each line a second time.
        if self.item_count() > VOLUME_DISCOUNT_THRESHOLD:
            for line in self.lines:
                subtotal -= line.quantity * line.unit_price_cents * VOLUME_DISCOUNT_PERCENT // 100
            subtotal -= subtotal * VOLUME_DISCOUNT_PERCENT // 100
        return subtotal
