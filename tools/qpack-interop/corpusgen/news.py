"""Profile `news`: a desktop Chrome 131 loading a news front page and two articles.

100 requests over six origins (site, static assets, images, API, a font CDN and an analytics
collector) and the responses to them; cookies go out as separate crumbs.
"""

import datetime

from .common import Gen, http_date

SITE = "www.dailyledger-news.com"
STATIC = "static.dailyledger-news.com"
IMAGES = "img.dailyledger-news.com"
API = "api.dailyledger-news.com"
FONTS = "fonts.typecdn-assets.net"
METRICS = "collect.pagemetrics-svc.io"

CHROME_MAJOR = "131"
USER_AGENT = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
SEC_CH_UA = '"Google Chrome";v="131", "Chromium";v="131", "Not_A Brand";v="24"'

ACCEPT = {
    "document": "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,"
    "image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
    "style": "text/css,*/*;q=0.1",
    "script": "*/*",
    "image": "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
    "font": "*/*",
    "xhr": "application/json, text/plain, */*",
    "beacon": "*/*",
}
PRIORITY = {
    "document": "u=0, i",
    "style": "u=0",
    "script": "u=1",
    "image": "u=5, i",
    "font": "u=0",
    "xhr": "u=1, i",
    "beacon": "u=4, i",
}
CONTENT_TYPE = {
    "document": "text/html; charset=utf-8",
    "style": "text/css",
    "script": "application/javascript; charset=utf-8",
    "font": "font/woff2",
    "xhr": "application/json; charset=utf-8",
}
IMAGE_TYPES = [("jpg", "image/jpeg"), ("webp", "image/webp"), ("png", "image/png"),
               ("svg", "image/svg+xml"), ("avif", "image/avif")]

SECTIONS = ["world", "politics", "business", "technology", "science", "sport", "culture",
            "opinion", "climate", "health"]
WORDS = ["election", "results", "live", "updates", "markets", "rally", "storm", "warning",
         "budget", "talks", "court", "ruling", "vaccine", "trial", "league", "final", "review",
         "festival", "energy", "prices", "summit", "leaders", "housing", "crisis", "space",
         "launch", "inflation", "report", "transfer", "deadline", "museum", "reopens"]

BASE_TIME = datetime.datetime(2026, 11, 24, 21, 30, 5, tzinfo=datetime.timezone.utc)


def slug(g, n):
    return "-".join(g.r.choice(WORDS) for _ in range(n))


def article_path(g):
    sec = g.r.choice(SECTIONS)
    return "/%s/2026/11/%02d/%s" % (sec, g.r.randint(20, 24), slug(g, g.r.randint(3, 6)))


def cookie_jar(g):
    """Crumbs sent to the site's own origins: a few long IDs, a few short flags."""
    return [
        "_ga=GA1.1.%d.%d" % (g.r.randint(10**8, 10**9 - 1), 1732400000 + g.r.randint(0, 99999)),
        "_ga_X7KQ2LM3PZ=GS1.1.%d.4.1.%d.0.0.0" % (1732480000 + g.r.randint(0, 9999),
                                                  1732480000 + g.r.randint(10000, 19999)),
        "session_id=%s" % g.b64ish(43),
        "consent=v2:ads-0,analytics-1,personalisation-1",
        "region=eu",
        "theme=light",
        "ab_bucket=%d" % g.r.randint(0, 99),
        "_fbp=fb.1.%d.%d" % (1732400000000 + g.r.randint(0, 99999999), g.r.randint(10**9, 10**10)),
    ]


def plan(g, n):
    """The kinds of the n requests, in load order: the page, its subresources, a second page."""
    kinds = ["document"]
    kinds += ["style"] * 4 + ["script"] * 6 + ["font"] * 3
    body = (["image"] * 40 + ["script"] * 12 + ["xhr"] * 14 + ["style"] * 3 + ["font"] * 2
            + ["beacon"] * 8 + ["document"] * 2)
    g.r.shuffle(body)
    kinds += body
    while len(kinds) < n:
        kinds.append(g.r.choice(["image", "xhr", "script", "beacon"]))
    return kinds[:n]


def request(g, kind, idx, state):
    """One request header list (Chrome's field order for HTTP/3)."""
    page = state["page"]
    if kind == "document":
        if idx == 0:
            authority, path, site, referer = SITE, "/", "none", None
        else:
            authority = SITE
            path = article_path(g)
            if g.r.random() < 0.5:
                path += "?ref=homepage&position=%d" % g.r.randint(1, 30)
            site, referer = "same-origin", "https://%s%s" % (SITE, page)
            state["page"] = path
    elif kind == "style":
        authority = STATIC
        path = "/assets/css/%s.%s.css" % (g.r.choice(["main", "article", "vendor", "print",
                                                       "header", "fonts"]), g.hexid(8))
        site, referer = "same-site", "https://%s/" % SITE
    elif kind == "script":
        authority = STATIC if g.r.random() < 0.8 else METRICS
        if authority == STATIC:
            path = "/assets/js/%s.%s.js" % (
                g.r.choice(["runtime", "vendors", "app", "article", "ads", "comments",
                            "video-player", "paywall", "newsletter", "live-blog"]), g.hexid(10))
        else:
            path = "/tag/v3/loader.js?id=PM-%s&l=dataLayer" % g.hexid(6).upper()
        site = "same-site" if authority == STATIC else "cross-site"
        referer = "https://%s/" % SITE
    elif kind == "font":
        authority = FONTS
        path = "/s/%s/v%d/%s.woff2" % (g.r.choice(["merriweather", "inter", "sourceserif4"]),
                                       g.r.randint(20, 40), g.b64ish(22))
        site, referer = "cross-site", "https://%s/" % STATIC
    elif kind == "image":
        authority = IMAGES
        ext, _ = g.r.choice(IMAGE_TYPES)
        path = "/images/2026/11/%02d/%s.%s?width=%d&quality=%d&auto=webp" % (
            g.r.randint(18, 24), g.hexid(16), ext, g.r.choice([320, 640, 800, 1200, 1600]),
            g.r.choice([75, 80, 85]))
        if ext == "svg":
            path = "/icons/%s.svg" % g.r.choice(["logo", "search", "menu", "share", "close",
                                                 "play", "account"])
        site, referer = "same-site", "https://%s%s" % (SITE, page)
    elif kind == "xhr":
        authority = API
        path = g.r.choice([
            "/v2/most-read?section=%s&limit=10" % g.r.choice(SECTIONS),
            "/v2/live/%s/updates?since=%d" % (g.hexid(12), 1732483800 + g.r.randint(0, 999)),
            "/v2/comments/count?ids=%s,%s,%s" % (g.hexid(8), g.hexid(8), g.hexid(8)),
            "/v2/user/me",
            "/v2/weather?lat=51.51&lon=-0.13",
            "/v2/markets/ticker?symbols=FTSE,DAX,SPX,NDX",
            "/v2/recommendations?article=%s&n=6" % g.hexid(12),
        ])
        site, referer = "same-site", "https://%s%s" % (SITE, page)
    else:  # beacon
        authority = METRICS
        path = "/g/collect?v=2&tid=PM-%s&cid=%d.%d&en=%s&dl=%s&_p=%d" % (
            "X7KQ2LM3PZ", state["cid"][0], state["cid"][1],
            g.r.choice(["page_view", "scroll", "user_engagement", "ad_impression"]),
            "https%3A%2F%2F" + SITE + page.replace("/", "%2F"), g.r.randint(10**8, 10**9))
        site, referer = "cross-site", "https://%s/" % SITE

    method = "POST" if kind == "beacon" else "GET"
    h = [(":method", method), (":authority", authority), (":scheme", "https"), (":path", path)]
    if kind == "beacon":
        h.append(("content-length", "0"))
    h += [
        ("sec-ch-ua-platform", '"Windows"'),
        ("user-agent", USER_AGENT),
        ("sec-ch-ua", SEC_CH_UA),
        ("sec-ch-ua-mobile", "?0"),
    ]
    if kind == "document":
        h.insert(4, ("upgrade-insecure-requests", "1"))
        h.insert(4, ("cache-control", "max-age=0"))
    if kind in ("font", "xhr") or (kind == "script" and authority == METRICS):
        h.append(("origin", "https://%s" % SITE))
    if kind == "xhr" and g.r.random() < 0.3:
        h.append(("authorization", "Bearer eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.%s.%s" % (
            g.b64ish(96), g.b64ish(43))))
    h.append(("accept", ACCEPT[kind]))
    dest = {"document": "document", "style": "style", "script": "script", "image": "image",
            "font": "font", "xhr": "empty", "beacon": "empty"}[kind]
    mode = {"document": "navigate", "font": "cors", "xhr": "cors", "beacon": "no-cors"}.get(
        kind, "no-cors")
    h.append(("sec-fetch-site", site))
    h.append(("sec-fetch-mode", mode))
    if kind == "document":
        h.append(("sec-fetch-user", "?1"))
    h.append(("sec-fetch-dest", dest))
    if referer is not None:
        h.append(("referer", referer))
    h.append(("accept-encoding", "gzip, deflate, br, zstd"))
    h.append(("accept-language", "en-GB,en-US;q=0.9,en;q=0.8"))
    if authority in (SITE, API):
        for crumb in state["cookies"]:
            h.append(("cookie", crumb))
    elif authority == METRICS:
        h.append(("cookie", "uid=%s" % state["metrics_uid"]))
    if kind == "image" and g.r.random() < 0.25:
        h.append(("if-none-match", '"%s"' % g.hexid(16)))
    h.append(("priority", PRIORITY[kind]))
    return h, authority, path


def response(g, kind, authority, path, t, state):
    """The response header list to one request."""
    conditional = kind == "image" and "if-none-match" in state["last_req_names"]
    if conditional and g.r.random() < 0.8:
        status = "304"
    elif kind == "beacon":
        status = "204"
    else:
        status = "200"
    h = [(":status", status)]
    if kind == "image":
        ext = path.split("?")[0].rsplit(".", 1)[-1]
        ctype = dict(IMAGE_TYPES)[ext]
    else:
        ctype = CONTENT_TYPE.get(kind)
    if status == "200" and ctype:
        h.append(("content-type", ctype))
        size = {"document": (60000, 250000), "style": (2000, 90000), "script": (1500, 400000),
                "image": (800, 350000), "font": (15000, 60000),
                "xhr": (80, 12000)}[kind]
        h.append(("content-length", str(g.r.randint(*size))))
        compressible = ctype.startswith(("text/", "application/")) or ctype == "image/svg+xml"
        if compressible:
            h.append(("content-encoding", g.r.choice(["br", "br", "gzip"])))
    h.append(("date", http_date(t)))
    if authority == SITE:
        h.append(("server", "nginx"))
    elif authority in (STATIC, IMAGES):
        h.append(("server", "ledger-edge"))
    elif authority == API:
        h.append(("server", "envoy"))
    elif authority == FONTS:
        h.append(("server", "sffe"))
    else:
        h.append(("server", "Golfe2"))
    if kind == "document":
        h.append(("cache-control", "private, no-cache, max-age=0, must-revalidate"))
    elif kind in ("style", "script", "font") and authority != METRICS:
        h.append(("cache-control", "public, max-age=31536000, immutable"))
    elif kind == "image":
        h.append(("cache-control", "public, max-age=86400, stale-while-revalidate=604800"))
    elif kind == "xhr":
        h.append(("cache-control", g.r.choice(["no-store", "private, max-age=30",
                                               "public, max-age=60, s-maxage=30"])))
    else:
        h.append(("cache-control", "no-cache, no-store, must-revalidate"))
    if kind in ("style", "script", "image", "font") and authority != METRICS:
        h.append(("etag", '"%s"' % g.hexid(16)))
        h.append(("last-modified", http_date(
            t - datetime.timedelta(days=g.r.randint(1, 90), seconds=g.r.randint(0, 86399)))))
        h.append(("age", str(g.r.randint(0, 80000))))
        h.append(("accept-ranges", "bytes"))
    if kind in ("document", "style", "script", "xhr"):
        h.append(("vary", "Accept-Encoding" if kind != "xhr" else "Origin, Accept-Encoding"))
    if kind in ("font", "xhr"):
        h.append(("access-control-allow-origin", "https://%s" % SITE))
    if kind == "xhr":
        h.append(("access-control-allow-credentials", "true"))
    if kind == "document" or (kind == "xhr" and g.r.random() < 0.15):
        h.append(("set-cookie", "session_id=%s; Path=/; Domain=.dailyledger-news.com; "
                  "Max-Age=2592000; Secure; HttpOnly; SameSite=Lax" % state["cookies"][2][11:]))
        if kind == "document":
            h.append(("set-cookie", "ab_bucket=%d; Path=/; Max-Age=604800; Secure" %
                      g.r.randint(0, 99)))
    if kind == "document":
        h.append(("content-security-policy", "default-src 'self' https:; script-src 'self' "
                  "https://%s https://%s 'nonce-%s'; img-src * data:; frame-ancestors 'self'" % (
                      STATIC, METRICS, g.b64ish(22))))
        h.append(("x-frame-options", "SAMEORIGIN"))
        h.append(("referrer-policy", "strict-origin-when-cross-origin"))
        h.append(("permissions-policy", "geolocation=(), microphone=(), camera=()"))
    if authority in (SITE, STATIC, IMAGES, API):
        h.append(("x-content-type-options", "nosniff"))
        h.append(("strict-transport-security", "max-age=31536000; includeSubDomains; preload"))
        h.append(("alt-svc", 'h3=":443"; ma=86400'))
        h.append(("x-request-id", g.uuid()))
    if authority in (STATIC, IMAGES):
        h.append(("x-cache", g.r.choice(["HIT", "HIT", "HIT", "MISS"])))
        h.append(("x-served-by", "cache-lhr%d-LHR" % g.r.randint(7000, 7099)))
    if authority == API:
        h.append(("x-ratelimit-remaining", str(g.r.randint(100, 999))))
        h.append(("x-envoy-upstream-service-time", str(g.r.randint(3, 250))))
    if authority == METRICS:
        h.append(("access-control-allow-origin", "*"))
        h.append(("cross-origin-resource-policy", "cross-origin"))
        h.append(("alt-svc", 'h3=":443"; ma=2592000,h3-29=":443"; ma=2592000'))
    return h


def generate(seed, n=100):
    g = Gen(seed)
    state = {
        "page": "/",
        "cookies": cookie_jar(g),
        "metrics_uid": g.b64ish(24),
        "cid": (g.r.randint(10**8, 10**9 - 1), 1732400000 + g.r.randint(0, 99999)),
    }
    requests, responses = [], []
    t = BASE_TIME
    for idx, kind in enumerate(plan(g, n)):
        req, authority, path = request(g, kind, idx, state)
        state["last_req_names"] = {name for name, _ in req}
        t += datetime.timedelta(seconds=g.r.choice([0, 0, 0, 1]))
        requests.append(req)
        responses.append(response(g, kind, authority, path, t, state))
    return requests, responses


