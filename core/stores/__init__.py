"""Store protocols and their backends; only `core.stores.factory` picks one."""
