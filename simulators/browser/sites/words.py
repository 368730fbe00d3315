"""Small word lists written for this project (seeded content for the sites)."""

WORDS = (
    "apple river stone cloud maple tiger lemon ocean pixel amber comet falcon harbor "
    "island jungle kettle lantern meadow nectar orbit pepper quartz raven saddle tulip "
    "violet willow yonder zephyr anchor bramble cedar dune ember fern glacier hazel ivory "
    "juniper kelp lotus marble nova olive prism quill ridge sierra thistle umber velvet "
    "wander yarrow basil cobalt delta"
).split()

FIRST_NAMES = (
    "Ada Ben Cara Dev Elif Finn Gia Hugo Iris Jon Kira Leo Mina Nico Omar Pia Quinn Rosa "
    "Sami Tara Uma Vik Wen Xena Yusuf Zoe"
).split()

LAST_NAMES = (
    "Abbot Brook Castro Dahl Evans Frost Garcia Hale Ito Jensen Kovac Lind Moreau Novak "
    "Okafor Price Quist Rossi Sato Tran Ueda Varga Weber Young Zhou"
).split()

COLORS = ("red", "green", "blue", "yellow", "purple", "orange", "black", "white", "pink", "gray")
COLOR_HEX = {
    "red": "#d33", "green": "#3a3", "blue": "#36c", "yellow": "#ec3", "purple": "#84c",
    "orange": "#f83", "black": "#111", "white": "#fafafa", "pink": "#f9c", "gray": "#888",
}
SHAPES = ("circle", "square", "triangle", "star", "heart")
COUNTRIES = (
    "Argentina Armenia Australia Austria Belgium Bolivia Brazil Bulgaria Canada Chile China "
    "Colombia Croatia Cuba Denmark Ecuador Egypt Estonia Finland France Germany Ghana Greece "
    "Hungary Iceland India Indonesia Ireland Israel Italy Jamaica Japan Jordan Kenya Latvia "
    "Lebanon Lithuania Malaysia Mexico Morocco Nepal Netherlands Nigeria Norway Pakistan "
    "Panama Peru Poland Portugal Romania Rwanda Senegal Serbia Singapore Slovakia Slovenia "
    "Spain Sweden Switzerland Thailand Tunisia Turkey Uganda Ukraine Uruguay Vietnam Zambia"
).split()
