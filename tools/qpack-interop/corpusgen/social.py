"""Profile `social`: a long session on a large social network's web app, one connection per
direction to its front door (the site, its static CDN, its photo CDN and its video CDN share
one HTTP/3 connection through the same edge, as a large property's edge allows).

What it stresses: responses that carry values unique by nature on every line (a per-response
debug token of 88 base64 characters, a numeric trip ID, Content-MD5 hashes of static files,
connection-quality figures, dates and the expiry derived from them) next to long security
headers that never change (x-frame-options, x-xss-protection, pragma, cache-control,
strict-transport-security, reporting endpoints, a document policy); requests with one long
cookie line that changes now and then, GraphQL POSTs with a per-session token and signed photo
URLs that never repeat.
"""

import datetime

from .common import Gen, http_date

SITE = "www.socialhub.example"
STATIC = "static.xx.socialcdn.example"
PHOTOS = "scontent-lhr8-1.xx.socialcdn.example"
VIDEO = "video-lhr8-2.xx.socialcdn.example"

USER_AGENT = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
SEC_CH_UA = '"Google Chrome";v="131", "Chromium";v="131", "Not_A Brand";v="24"'

FRIENDLY_NAMES = [
    "CometNewsFeedPaginationQuery", "CometUFIFeedbackReactMutation", "CometNotificationsDropdownQuery",
    "MessengerGraphQLThreadlistFetcher", "CometHovercardQueryRendererQuery",
    "CometStoriesSuspenseContextualProfileQuery", "CometVideoHomeFeedRootQuery",
    "useCometTypeaheadDataSourceQuery", "CometProfileTimelineFeedRefetchQuery",
    "CometFriendingListsPaginationQuery", "CometMarketplaceRootQuery", "CometSearchResultsQuery",
]
PAGES = ["/", "/watch/", "/marketplace/", "/groups/feed/", "/notifications/", "/messages/t/",
         "/profile.php?id=100064821937512", "/events/"]
BASE_TIME = datetime.datetime(2026, 11, 25, 9, 14, 2, tzinfo=datetime.timezone.utc)
LAST_MODIFIED = "Mon, 01 Jan 2001 08:00:00 GMT"
EXPIRES_PAST = "Sat, 01 Jan 2000 00:00:00 GMT"


def session(g):
    """What stays the same for the whole session."""
    s = {
        "datr": g.b64ish(24),
        "sb": g.b64ish(24),
        "c_user": "1000" + g.digits(11),
        "xs": "%d%%3A%s%%3A2%%3A%d%%3A-1%%3A%d" % (g.r.randint(10, 49), g.b64ish(14),
                                                 1732400000 + g.r.randint(0, 99999),
                                                 g.r.randint(1000, 9999)),
        "fr": "0" + g.b64ish(20) + "." + g.b64ish(40) + ".BnR" + g.b64ish(6) + ".AAA.0.0." + g.b64ish(10),
        "lsd": g.b64ish(22),
        "brsid": g.digits(19),
        "spin_r": g.digits(10),
        "presence_t": 1732526042000,
        "page": "/",
    }
    return s


def cookie(s, t):
    """The one cookie line the browser sends to the site (presence changes with time)."""
    presence = "C%%7B%%22t3%%22%%3A%%5B%%5D%%2C%%22utc3%%22%%3A%d%%2C%%22v%%22%%3A1%%7D" % (
        s["presence_t"] + int((t - BASE_TIME).total_seconds() // 40) * 40000)
    return "datr=%s; sb=%s; c_user=%s; xs=%s; fr=%s; wd=1512x823; dpr=2; presence=%s" % (
        s["datr"], s["sb"], s["c_user"], s["xs"], s["fr"], presence)


def photo_path(g):
    return ("/v/t39.30808-6/%d_%d_%d_n.jpg?stp=dst-jpg_p%dx%d&_nc_cat=%d&ccb=1-7&_nc_sid=%s"
            "&_nc_ohc=%s&_nc_ht=scontent-lhr8-1.xx&oh=00_%s&oe=%X") % (
        g.r.randint(10**8, 10**9), g.r.randint(10**14, 10**15), g.r.randint(10**15, 10**16),
        g.r.choice([526, 720, 960]), g.r.choice([395, 540, 720]), g.r.randint(100, 111),
        g.hexid(6), g.b64ish(27), g.b64ish(36), 0x674A0000 + g.r.randint(0, 0xFFFF))


def plan(g, n):
    """Page views, each followed by the resources and calls it makes."""
    kinds = []
    while len(kinds) < n:
        kinds.append("document")
        burst = (["script"] * g.r.randint(6, 14) + ["style"] * g.r.randint(2, 5)
                 + ["photo"] * g.r.randint(8, 20) + ["graphql"] * g.r.randint(6, 14)
                 + ["video"] * g.r.randint(0, 4) + ["bz"] * g.r.randint(1, 3))
        g.r.shuffle(burst)
        kinds += burst
    return kinds[:n]


def request(g, kind, s, t):
    headers_common = [
        ("sec-ch-ua", SEC_CH_UA),
        ("sec-ch-ua-mobile", "?0"),
        ("sec-ch-ua-platform", '"macOS"'),
        ("user-agent", USER_AGENT),
    ]
    if kind == "document":
        s["page"] = g.r.choice(PAGES)
        h = [(":method", "GET"), (":authority", SITE), (":scheme", "https"), (":path", s["page"]),
             ("cache-control", "max-age=0"), ("dpr", "2"), ("viewport-width", "1512")]
        h += headers_common
        h += [("upgrade-insecure-requests", "1"),
              ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,"
                         "image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"),
              ("sec-fetch-site", "same-origin"), ("sec-fetch-mode", "navigate"),
              ("sec-fetch-user", "?1"), ("sec-fetch-dest", "document"),
              ("referer", "https://%s/" % SITE)]
    elif kind in ("script", "style"):
        ext = "js" if kind == "script" else "css"
        path = "/rsrc.php/v3%s/y%s/r/%s.%s" % (g.r.choice(["", "i"]), g.b64ish(2), g.b64ish(11), ext)
        if g.r.random() < 0.4:
            path += "?_nc_x=%s" % g.b64ish(11)
        h = [(":method", "GET"), (":authority", STATIC), (":scheme", "https"), (":path", path)]
        h += headers_common
        h += [("accept", "*/*" if kind == "script" else "text/css,*/*;q=0.1"),
              ("origin", "https://%s" % SITE) if kind == "script" else ("sec-fetch-user", "?0"),
              ("sec-fetch-site", "cross-site"),
              ("sec-fetch-mode", "cors" if kind == "script" else "no-cors"),
              ("sec-fetch-dest", kind), ("referer", "https://%s/" % SITE)]
    elif kind in ("photo", "video"):
        authority = PHOTOS if kind == "photo" else VIDEO
        path = photo_path(g) if kind == "photo" else (
            "/o1/v/t2/f2/m69/%s.mp4?strext=1&_nc_cat=%d&_nc_sid=%s&efg=%s&_nc_ht=video-lhr8-2.xx"
            "&_nc_ohc=%s&oh=00_%s&oe=%X&bytestart=%d&byteend=%d" % (
                g.b64ish(40), g.r.randint(100, 111), g.hexid(6), g.b64ish(80), g.b64ish(27),
                g.b64ish(36), 0x674A0000 + g.r.randint(0, 0xFFFF), 0, g.r.randint(10**5, 10**6)))
        h = [(":method", "GET"), (":authority", authority), (":scheme", "https"), (":path", path)]
        h += headers_common
        h += [("accept", "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
               if kind == "photo" else "*/*"),
              ("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "no-cors"),
              ("sec-fetch-dest", "image" if kind == "photo" else "video"),
              ("referer", "https://%s/" % SITE)]
    else:  # graphql or bz (logging beacons): POSTs to the site with the cookie
        path = "/api/graphql/" if kind == "graphql" else "/ajax/bz?__a=1&__req=%s" % g.b64ish(2).lower()
        body = g.r.randint(900, 5200) if kind == "graphql" else g.r.randint(300, 2400)
        h = [(":method", "POST"), (":authority", SITE), (":scheme", "https"), (":path", path),
             ("content-length", str(body))]
        h += headers_common
        if kind == "graphql":
            h += [("x-sn-friendly-name", g.r.choice(FRIENDLY_NAMES)), ("x-sn-lsd", s["lsd"]),
                  ("x-asbd-id", "129477")]
        h += [("content-type", "application/x-www-form-urlencoded"), ("accept", "*/*"),
              ("origin", "https://%s" % SITE), ("sec-fetch-site", "same-origin"),
              ("sec-fetch-mode", "cors"), ("sec-fetch-dest", "empty"),
              ("referer", "https://%s%s" % (SITE, s["page"]))]
    h += [("accept-encoding", "gzip, deflate, br, zstd"),
          ("accept-language", "en-GB,en;q=0.9")]
    if h[1][1] == SITE:
        h.append(("cookie", cookie(s, t)))
    h.append(("priority", {"document": "u=0, i", "script": "u=1", "style": "u=0",
                           "photo": "u=2, i", "video": "u=3, i", "graphql": "u=1, i",
                           "bz": "u=4, i"}[kind]))
    return h


def connection_quality(g):
    return ("EXCELLENT; q=0.9, rtt=%d, rtx=0, c=10, mss=1232, tbw=%d, tp=-1, tpl=-1, uplat=%d, "
            "ullat=0" % (g.r.randint(8, 40), g.r.randint(3000, 3600), g.r.randint(100, 600)))


def response(g, kind, s, t):
    status = "200"
    if kind == "bz" and g.r.random() < 0.5:
        status = "204"
    h = [(":status", status)]
    debug = g.b64(66)  # 88 characters, unique per response
    trip = g.digits(10)
    if kind in ("document", "graphql", "bz"):
        ctype = {"document": 'text/html; charset="utf-8"',
                 "graphql": "application/json; charset=utf-8",
                 "bz": "text/javascript; charset=utf-8"}[kind]
        if status == "200":
            h.append(("content-type", ctype))
        if kind == "document":
            h.append(("reporting-endpoints",
                      'coop_report="https://%s/browser_reporting/coop/?minimize=0", '
                      'coep_report="https://%s/browser_reporting/coep/?minimize=0", '
                      'default="https://%s/ajax/comet_error_reports/?device_level=unknown&brsid=%s", '
                      'permissions_policy="https://%s/ajax/browser_error_reports/"'
                      % (SITE, SITE, SITE, s["brsid"], SITE)))
            h.append(("report-to", '{"max_age":259200,"endpoints":[{"url":"https:\\/\\/%s\\/'
                      'ajax\\/browser_error_reports\\/?device_level=unknown"}],'
                      '"group":"network-errors"}' % SITE))
            h.append(("content-security-policy",
                      "default-src data: blob: 'self' https://*.socialcdn.example; script-src "
                      "*.socialhub.example *.socialcdn.example blob: 'self' 'wasm-unsafe-eval' "
                      "'nonce-%s';style-src data: blob: 'unsafe-inline' *.socialcdn.example;"
                      "connect-src *.socialhub.example wss://*.socialhub.example:* blob: "
                      "'self';block-all-mixed-content;upgrade-insecure-requests;" % g.b64ish(8)))
            h.append(("document-policy", "force-load-at-top"))
            h.append(("permissions-policy",
                      "accelerometer=(), ambient-light-sensor=(), bluetooth=(), camera=(self), "
                      "display-capture=(self), encrypted-media=(self), fullscreen=(self), "
                      "geolocation=(self), gyroscope=(), magnetometer=(), microphone=(self), "
                      "midi=(), payment=(), picture-in-picture=(self), screen-wake-lock=(), "
                      "usb=(), xr-spatial-tracking=(self)"))
            h.append(("cross-origin-embedder-policy-report-only",
                      'require-corp;report-to="coep_report"'))
            h.append(("cross-origin-opener-policy", 'same-origin-allow-popups;report-to="coop_report"'))
        h += [("vary", "Accept-Encoding"), ("x-content-type-options", "nosniff"),
              ("x-xss-protection", "0"), ("pragma", "no-cache"),
              ("cache-control", "private, no-cache, no-store, must-revalidate"),
              ("expires", EXPIRES_PAST), ("x-frame-options", "DENY")]
        if kind != "document":
            h.append(("access-control-allow-origin", "https://%s" % SITE))
            h.append(("access-control-allow-credentials", "true"))
        h.append(("strict-transport-security", "max-age=15552000; preload"))
        if status == "200":
            h.append(("content-encoding", g.r.choice(["zstd", "zstd", "br"])))
        h.append(("origin-agent-cluster", "?0"))
    elif kind in ("script", "style"):
        h += [("content-type", "application/x-javascript; charset=utf-8" if kind == "script"
               else "text/css; charset=utf-8"),
              ("access-control-allow-origin", "*"),
              ("content-md5", g.b64(16)),
              ("last-modified", LAST_MODIFIED),
              ("expires", http_date(t + datetime.timedelta(days=365))),
              ("cache-control", "public,max-age=31536000,immutable"),
              ("timing-allow-origin", "*"),
              ("cross-origin-resource-policy", "cross-origin"),
              ("content-encoding", "br"),
              ("x-sn-spin-r", s["spin_r"])]
    else:  # photo or video
        h += [("content-type", "image/jpeg" if kind == "photo" else "video/mp4"),
              ("last-modified", http_date(t - datetime.timedelta(days=g.r.randint(1, 900),
                                                                  seconds=g.r.randint(0, 86399)))),
              ("x-needle-checksum", str(g.r.randint(10**8, 4 * 10**9))),
              ("cache-control", "max-age=1209600, no-transform"),
              ("access-control-allow-origin", "*"),
              ("timing-allow-origin", "*"),
              ("cross-origin-resource-policy", "cross-origin"),
              ("accept-ranges", "bytes")]
    if status == "200":
        h.append(("content-length", str(g.r.randint(400, 900000))))
    h.append(("x-sn-debug", debug))
    h.append(("x-sn-trip-id", trip))
    h.append(("date", http_date(t)))
    h.append(("priority", "u=3,i"))
    h.append(("alt-svc", 'h3=":443"; ma=86400'))
    h.append(("x-sn-connection-quality", connection_quality(g)))
    return h


def generate(seed, n=400):
    g = Gen(seed)
    s = session(g)
    requests, responses = [], []
    t = BASE_TIME
    for kind in plan(g, n):
        t += datetime.timedelta(seconds=g.r.choice([0, 0, 0, 1, 1, 2]))
        requests.append(request(g, kind, s, t))
        responses.append(response(g, kind, s, t))
    return requests, responses
