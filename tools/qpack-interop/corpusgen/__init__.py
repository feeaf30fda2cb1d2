"""Corpus generators for the QPACK benchmark: one module per traffic profile.

Each module has `generate(seed, n)` returning (requests, responses): two lists of header
lists (each a list of (name, value) strings), one per direction of a connection.
"""

from . import api, cdn, news, shop, social

# Profile name -> (module, seed offset added to --seed, what it is).
PROFILES = {
    "news": (news, 0, "requests of a news page load"),
    "social": (social, 1, "requests of a session on a social network's web app"),
    "api": (api, 2, "requests of a mobile app to its JSON API"),
    "cdn": (cdn, 3, "requests of a video player and an image page to two CDN edges"),
    "shop": (shop, 4, "requests of a browser shopping, with many cookies"),
}
