"""Server variants and their lifecycle on a host."""

from workbench.servers.handle import ServerHandle
from workbench.servers.variants import Variant, list_variants, load_variant

__all__ = ["ServerHandle", "Variant", "list_variants", "load_variant"]
