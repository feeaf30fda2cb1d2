"""Profile `shop`: a desktop Edge browsing an online shop: home page, search, three product
pages, basket and checkout, each page with its images, scripts and API calls.

What it stresses: many cookies. The shop's origins get one cookie line of about 30 crumbs
(1.2-1.6 KB: consent strings, analytics, A/B buckets, the basket) that changes whenever a
response sets a cookie (the basket, a session timestamp), so a long line repeats for a while
and is then replaced; third-party tags get their own shorter cookie lines; responses carry
Set-Cookie (a secret, never indexed) and the usual security headers.
"""

import datetime

from .common import Gen, http_date

SITE = "www.northwind-outfitters.example"
ASSETS = "assets.northwind-outfitters.example"
MEDIA = "media.northwind-outfitters.example"
API = "api.northwind-outfitters.example"
TAGS = "tags.adsignal.example"
USER_AGENT = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
              "Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0")
SEC_CH_UA = '"Microsoft Edge";v="131", "Chromium";v="131", "Not_A Brand";v="24"'
BASE_TIME = datetime.datetime(2026, 11, 27, 12, 5, 30, tzinfo=datetime.timezone.utc)
PAGES = ["/", "/search?q=rain+jacket", "/p/stormline-shell-jacket-%d", "/p/trailhead-pack-%d",
         "/p/merino-base-layer-%d", "/basket", "/checkout/delivery"]


def jar(g):
    """The shop's cookies as (name, value), in the order the browser sends them."""
    crumbs = [
        ("OptanonConsent", "isGpcEnabled=0&datestamp=Wed+Nov+27+2026+12%%3A01%%3A12+GMT%%2B0000&"
         "version=202409.1.0&browserGpcFlag=0&isIABGlobal=false&hosts=&consentId=%s&"
         "interactionCount=1&isAnonUser=1&landingPath=NotLandingPage&groups=C0001%%3A1%%2C"
         "C0002%%3A1%%2CC0003%%3A1%%2CC0004%%3A0&AwaitingReconsent=false" % g.uuid()),
        ("OptanonAlertBoxClosed", "2026-11-27T12:01:12.448Z"),
        ("_ga", "GA1.1.%d.%d" % (g.r.randint(10**8, 10**9), 1732708800 + g.r.randint(0, 999))),
        ("_ga_NW0UTF1TT3", "GS1.1.1732709000.1.1.1732709130.0.0.0"),
        ("_gcl_au", "1.1.%d.%d" % (g.r.randint(10**8, 10**9), 1732708872)),
        ("_fbp", "fb.1.%d.%d" % (1732708872000 + g.r.randint(0, 999), g.r.randint(10**8, 10**9))),
        ("_pin_unauth", "dWlkPU" + g.b64ish(40)),
        ("_uetsid", g.hexid(32)), ("_uetvid", g.hexid(32)),
        ("nw_session", g.b64ish(64)),
        ("nw_visitor", g.uuid()),
        ("nw_ab", "hp_hero:B|pdp_gallery:A|checkout_v3:B|reco_model:ctrl"),
        ("nw_currency", "GBP"), ("nw_country", "GB"), ("nw_lang", "en-GB"),
        ("nw_basket", "0"),
        ("nw_recent", ""),
        ("__cf_bm", g.b64ish(43) + "-1732709130-1.0.1.1-" + g.b64ish(86)),
        ("_cfuvid", g.b64ish(43) + "-1732708872441-0.0.1.1-604800000"),
        ("ak_bmsc", g.hexid(32).upper() + "~000000000000000000000000000000~" + g.b64ish(180)),
        ("bm_sv", g.hexid(32).upper() + "~" + g.b64ish(120) + "~"),
        ("cto_bundle", g.b64ish(150)),
        ("_hjSessionUser_2817365", g.b64ish(120)),
        ("_hjSession_2817365", g.b64ish(110)),
        ("_clck", "1x9q2bz%7C2%7Cfr3%7C0%7C1790"),
        ("_clsk", "%s%%7C1732709130447%%7C3%%7C1%%7Cq.clarity.ms%%2Fcollect" % g.b64ish(7).lower()),
        ("dtCookie", "v_4_srv_3_sn_%s_perc_100000_ol_0_mul_1_app-3A%s_1" % (g.hexid(32).upper(),
                                                                           g.hexid(16))),
        ("rxVisitor", "1732708872448" + g.b64ish(19).upper()),
    ]
    return crumbs


def cookie_line(crumbs):
    return "; ".join("%s=%s" % c for c in crumbs)


def set_crumb(crumbs, name, value):
    for i, (n, _) in enumerate(crumbs):
        if n == name:
            crumbs[i] = (name, value)
            return


def plan(g):
    kinds = []
    for page in range(len(PAGES)):
        kinds.append(("document", page))
        sub = (["image"] * g.r.randint(12, 30) + ["script"] * g.r.randint(3, 8)
               + ["style"] * g.r.randint(1, 3) + ["api"] * g.r.randint(3, 8)
               + ["tag"] * g.r.randint(2, 6))
        g.r.shuffle(sub)
        kinds += [(k, page) for k in sub]
    return kinds


def request(g, kind, page, s, t):
    if kind == "document":
        path = PAGES[page]
        if "%d" in path:
            path = path % g.r.randint(100000, 999999)
        s["page"] = path
        authority, dest, mode, site = SITE, "document", "navigate", "same-origin"
        accept = ("text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,"
                  "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7")
        method = "GET"
    elif kind == "image":
        path = "/i/%s/%s.jpg?w=%d&fmt=webp" % (g.hexid(2), g.hexid(20), g.r.choice([200, 400, 800]))
        authority, dest, mode, site = MEDIA, "image", "no-cors", "same-site"
        accept = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
        method = "GET"
    elif kind in ("script", "style"):
        path = "/build/%s.%s.%s" % (g.r.choice(["runtime", "vendor", "app", "pdp", "checkout",
                                                "search", "basket"]), g.hexid(20),
                                    "js" if kind == "script" else "css")
        authority, dest, mode, site = ASSETS, kind, "no-cors", "same-site"
        accept = "*/*" if kind == "script" else "text/css,*/*;q=0.1"
        method = "GET"
    elif kind == "api":
        method, path = g.r.choice([("GET", "/v1/basket"), ("GET", "/v1/recommendations?slot=pdp"),
                                   ("POST", "/v1/basket/items"), ("GET", "/v1/stock?sku=%d"),
                                   ("POST", "/v1/events")])
        if "%d" in path:
            path = path % g.r.randint(10**6, 10**7)
        authority, dest, mode, site = API, "empty", "cors", "same-site"
        accept = "application/json"
    else:
        method = "GET"
        path = "/collect?pid=%d&ev=%s&url=%s&cb=%d" % (
            g.r.randint(10**5, 10**6), g.r.choice(["PageView", "ViewContent", "AddToCart"]),
            ("https%3A%2F%2F" + SITE + s["page"].replace("/", "%2F")), g.r.randint(10**9, 10**10))
        authority, dest, mode, site = TAGS, "image", "no-cors", "cross-site"
        accept = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
    h = [(":method", method), (":authority", authority), (":scheme", "https"), (":path", path)]
    if method == "POST":
        h += [("content-length", str(g.r.randint(40, 2000))), ("content-type", "application/json")]
    h += [("sec-ch-ua-platform", '"Windows"'), ("user-agent", USER_AGENT),
          ("sec-ch-ua", SEC_CH_UA), ("sec-ch-ua-mobile", "?0"), ("accept", accept)]
    if mode == "cors":
        h.append(("origin", "https://" + SITE))
    h += [("sec-fetch-site", site), ("sec-fetch-mode", mode)]
    if kind == "document":
        h.append(("sec-fetch-user", "?1"))
    h += [("sec-fetch-dest", dest), ("referer", "https://%s%s" % (SITE, s["page"])),
          ("accept-encoding", "gzip, deflate, br, zstd"), ("accept-language", "en-GB,en;q=0.9")]
    if authority in (SITE, API):
        h.append(("cookie", cookie_line(s["jar"])))
    elif authority == TAGS:
        h.append(("cookie", "uid=%s; ar_debug=1" % s["tag_uid"]))
    h.append(("priority", {"document": "u=0, i", "image": "u=5, i", "script": "u=1",
                           "style": "u=0", "api": "u=1, i", "tag": "u=4, i"}[kind]))
    return h


def response(g, kind, req, s, t):
    h = [(":status", "200")]
    ctype = {"document": "text/html; charset=utf-8", "image": "image/webp",
             "script": "application/javascript", "style": "text/css",
             "api": "application/json", "tag": "image/gif"}[kind]
    h += [("content-type", ctype), ("content-length", str(g.r.randint(43, 300000))),
          ("date", http_date(t))]
    if kind in ("document", "api"):
        h += [("cache-control", "no-store"), ("x-frame-options", "SAMEORIGIN"),
              ("x-content-type-options", "nosniff"),
              ("strict-transport-security", "max-age=63072000; includeSubDomains; preload"),
              ("server-timing", "cdn-cache; desc=MISS, edge; dur=%d, origin; dur=%d"
               % (g.r.randint(1, 40), g.r.randint(20, 400))),
              ("x-correlation-id", g.uuid())]
        sets = []
        if kind == "document":
            s["jar"][9] = ("nw_session", g.b64ish(64))
            sets.append("nw_session=%s; Path=/; Secure; HttpOnly; SameSite=Lax" % s["jar"][9][1])
            stamp = int((t - BASE_TIME).total_seconds()) + 1732709130
            set_crumb(s["jar"], "_ga_NW0UTF1TT3", "GS1.1.1732709000.1.1.%d.0.0.0" % stamp)
        if kind == "api" and req[3][1] == "/v1/basket/items" and req[0][1] == "POST":
            s["basket"] += 1
            set_crumb(s["jar"], "nw_basket", str(s["basket"]))
            sets.append("nw_basket=%d; Path=/; Max-Age=2592000; Secure; SameSite=Lax" % s["basket"])
        for value in sets:
            h.append(("set-cookie", value))
    else:
        h += [("cache-control", "public, max-age=31536000, immutable" if kind != "tag"
               else "no-cache, no-store, must-revalidate"),
              ("etag", '"%s"' % g.hexid(24)), ("age", str(g.r.randint(0, 90000))),
              ("x-cache", g.r.choice(["TCP_HIT", "TCP_HIT", "TCP_MEM_HIT", "TCP_MISS"])),
              ("access-control-allow-origin", "*"), ("timing-allow-origin", "*")]
    h += [("alt-svc", 'h3=":443"; ma=93600'), ("server", "AkamaiGHost" if kind != "tag" else "adsignal")]
    return h


def generate(seed, n=None):
    g = Gen(seed)
    s = {"jar": jar(g), "basket": 0, "page": "/", "tag_uid": g.b64ish(22)}
    requests, responses = [], []
    t = BASE_TIME
    for kind, page in plan(g):
        t += datetime.timedelta(seconds=g.r.choice([0, 0, 1]) + (3 if kind == "document" else 0))
        req = request(g, kind, page, s, t)
        requests.append(req)
        responses.append(response(g, kind, req, s, t))
    if n is not None:
        requests, responses = requests[:n], responses[:n]
    return requests, responses
