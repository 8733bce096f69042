"""`inferlab drill`: the deck's flash cards with fresh numbers, graded, with a Leitner history.

Built on specs/ and physics/ only: every expected answer comes from the same
physics functions the floor, capacity, cost and amdahl verbs call.
"""
