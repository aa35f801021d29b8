"""Which files each device's I/O is for, who holds them and who dirtied them."""
