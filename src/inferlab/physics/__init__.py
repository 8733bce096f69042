"""What the hardware allows: roofline step times, prefill, capacity, price, Amdahl, levers.

Pure functions over numbers and specs; nothing here does I/O or imports bench/.
"""
