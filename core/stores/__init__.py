"""Store protocols and their backends; only `stratus.stores.factory` picks one."""
