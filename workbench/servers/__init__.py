"""Server variants and their lifecycle on a host."""

from workbench.servers.launch import ServerHandle
from workbench.servers.variants import Variant, list_variants, load_variant

__all__ = ["ServerHandle", "Variant", "list_variants", "load_variant"]
