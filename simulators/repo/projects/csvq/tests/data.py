PEOPLE = """name,age,city,salary
Ada,36,London,5200
Brian,28,Paris,3100
Chloe,45,London,6100
Dmitri,31,Berlin,
Eve,28,Paris,3900
Farah,52,Berlin,7000
"""
