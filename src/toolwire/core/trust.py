"""Where a model runs (``TrustZone``), how sensitive a tool's data is (``DataClass``), and how
far a tool's output may be believed as instructions (``Integrity``).

The one owner of these vocabularies, a leaf module every other module may import. A zone has
a ceiling: the most sensitive class of data a tool may have and still be offered to a model
there.

Secrets and personal data are not data classes: they are shapes inside any tool's output. A
secret shape (:mod:`toolwire.core.redact`) is masked in tool output always; personal data
(:mod:`toolwire.core.personal`: e-mail, phone, IBAN, card numbers) is shown to the zones a
workspace's policy names (``PERSONAL_DATA_ZONES`` unless it says otherwise: the model runs on
this machine or on a host the operator controls) and masked for every other zone, at the seam
(:mod:`toolwire.tools.disclosure`), in the content and the artifacts alike.

Parsing is strict: a misspelt value (``"contnet"``, ``"moon"``) is a ``ConfigError`` naming the
choices, never silently the strictest option, which would hide a tool or a provider without a
word. A *missing* value (``None``) is the strictest: ``secret_adjacent``, ``external_global``.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum, StrEnum

from toolwire.core.errors import ConfigError


class DataClass(IntEnum):
    """How sensitive the data a tool reads is, least to most."""

    PUBLIC = 0
    CONTENT = 1
    SOURCE_CODE = 2
    CONFIGURATION = 3
    SYSTEM_DIAGNOSTICS = 4
    SECRET_ADJACENT = 5

    @classmethod
    def parse(cls, value: object) -> DataClass:
        """The class ``value`` names (a ``DataClass`` or its name, any case); None is the
        strictest class; anything else is a ``ConfigError``."""
        if isinstance(value, DataClass):
            return value
        if value is None:
            return cls.SECRET_ADJACENT
        try:
            return cls[str(value).strip().upper()]
        except KeyError:
            choices = ", ".join(c.name.lower() for c in cls)
            raise ConfigError(
                f"unknown data class {_shown(value)}: choose one of {choices}"
            ) from None


# The name a tool's (or an MCP server's) data class has when its author names none: unknown
# means the strictest class.
DEFAULT_DATA_CLASS = DataClass.SECRET_ADJACENT.name.lower()


class TrustZone(StrEnum):
    """Where the provider runs, which bounds what data may be sent to it. Declared most
    trusted first: each zone's ceiling is at most the one before it."""

    LOCAL = "local"
    PRIVATE_HOSTED = "private_hosted"
    EXTERNAL_EU = "external_eu"
    EXTERNAL_GLOBAL = "external_global"

    @classmethod
    def parse(cls, value: object) -> TrustZone:
        """The zone ``value`` names (any case); None is the least trusted zone; anything else
        is a ``ConfigError``."""
        if isinstance(value, TrustZone):
            return value
        if value is None:
            return cls.EXTERNAL_GLOBAL
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            choices = ", ".join(z.value for z in cls)
            raise ConfigError(
                f"unknown trust zone {_shown(value)}: choose one of {choices}"
            ) from None

    @property
    def ceiling(self) -> DataClass:
        return _CEILINGS[self]

    @classmethod
    def least_trusted(cls, zones: Iterable[object]) -> TrustZone:
        """The least trusted of ``zones`` (each parsed as :meth:`parse` does): where data sent
        to any of them may go. The zones are declared most trusted first; none at all is the
        least trusted zone."""
        order = list(cls)
        parsed = [cls.parse(zone) for zone in zones]
        return max(parsed, key=order.index) if parsed else cls.EXTERNAL_GLOBAL

    @property
    def more_trusted(self) -> tuple[TrustZone, ...]:
        """The zones more trusted than this one, most trusted first."""
        order = list(TrustZone)
        return tuple(order[: order.index(self)])


class Integrity(StrEnum):
    """How far the text of a tool's result may be believed as instructions."""

    TRUSTED = "trusted"
    UNTRUSTED = "untrusted"

    @classmethod
    def parse(cls, value: object, where: str = "integrity") -> Integrity:
        """The label ``value`` names (any case); anything else is a ``ConfigError`` naming
        ``where`` and the choices."""
        if isinstance(value, Integrity):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            raise ConfigError(
                f"{where}: unknown integrity label {_shown(value)}: choose trusted or untrusted"
            ) from None


_CEILINGS = {
    TrustZone.LOCAL: DataClass.SECRET_ADJACENT,
    TrustZone.PRIVATE_HOSTED: DataClass.SYSTEM_DIAGNOSTICS,
    TrustZone.EXTERNAL_EU: DataClass.CONFIGURATION,
    TrustZone.EXTERNAL_GLOBAL: DataClass.CONTENT,
}


def _shown(value: object) -> str:
    text = str(value)
    return repr(text if len(text) <= 40 else text[:40] + "…")


# The zones a model may read personal data in unless the workspace's policy says otherwise:
# on this machine, or on a host the operator runs. External providers see it masked.
PERSONAL_DATA_ZONES = frozenset({TrustZone.LOCAL, TrustZone.PRIVATE_HOSTED})


# The cloud regions inside the European Union, by the names Azure and Google Cloud give them:
# a model served there runs in the ``external_eu`` zone. Only member states count: London
# (uksouth, europe-west2), Zurich (switzerlandnorth, europe-west6) and Norway (norwayeast) are
# not in the EU, and a region not listed is the least trusted zone, never guessed closer.
AZURE_EU_REGIONS = frozenset({
    "westeurope", "northeurope", "francecentral", "francesouth", "germanywestcentral",
    "germanynorth", "swedencentral", "swedensouth", "italynorth", "polandcentral",
    "spaincentral", "austriaeast", "belgiumcentral",
})  # fmt: skip
GOOGLE_EU_REGIONS = frozenset({
    "eu",  # Vertex AI's multi-region inside the EU
    "europe-west1", "europe-west3", "europe-west4", "europe-west8", "europe-west9",
    "europe-west10", "europe-west12", "europe-north1", "europe-north2", "europe-central2",
    "europe-southwest1",
})  # fmt: skip
# AWS's regions in EU member states (Ireland, Frankfurt, Paris, Stockholm, Milan, Spain);
# London and Zurich are in Europe but not in the EU.
AWS_EU_REGIONS = frozenset(
    {"eu-west-1", "eu-central-1", "eu-west-3", "eu-north-1", "eu-south-1", "eu-south-2"}
)
EU_REGIONS = AZURE_EU_REGIONS | GOOGLE_EU_REGIONS | AWS_EU_REGIONS


def region_zone(region: str | None) -> TrustZone:
    """The zone of a cloud region named in settings (never read off a hostname): an EU
    region's is ``external_eu``; any other, or none, ``external_global``. Azure's display
    names ("West Europe") are read as its region names."""
    name = "".join((region or "").split()).lower()
    return TrustZone.EXTERNAL_EU if name in EU_REGIONS else TrustZone.EXTERNAL_GLOBAL


class UntrustedActions(StrEnum):
    """What becomes of a consequential call planned on untrusted (or too sensitive) context."""

    APPROVE = "approve"  # it waits for a person, the reason shown
    REFUSE = "refuse"  # it does not run; the model reads why

    @classmethod
    def parse(cls, value: object, where: str = "untrusted_actions") -> UntrustedActions:
        if isinstance(value, UntrustedActions):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            shown = str(value)[:40]
            raise ConfigError(f"{where}: {shown!r} is not one of approve, refuse") from None
