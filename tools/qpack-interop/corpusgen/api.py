"""Profile `api`: a mobile app talking JSON to its backend over one long connection.

What it stresses: short header lists (4 to 12 lines) where most of the bytes are values that
never repeat (request IDs, W3C trace context, resource IDs in paths, ETags, rate-limit
counters) next to a few that always do (the app's user agent, accept, an API version, the
server's fixed headers); a bearer token on every request (a secret: sent as a never-indexed
literal by us, whatever it costs) that is refreshed once during the session.
"""

import datetime

from .common import Gen, http_date

API = "api.trailmate.example"
USER_AGENT = "TrailMate/7.4.2 (com.trailmate.ios; build:74210; iOS 18.1.1) Alamofire/5.9.1"
BASE_TIME = datetime.datetime(2026, 11, 26, 7, 2, 40, tzinfo=datetime.timezone.utc)

CALLS = [
    # (method, path template, has body, response kind)
    ("GET", "/v4/me", False, "json"),
    ("GET", "/v4/feed?cursor=%s&limit=20", False, "json"),
    ("GET", "/v4/activities/%d", False, "json"),
    ("GET", "/v4/activities/%d/streams?keys=latlng,altitude,heartrate", False, "json"),
    ("POST", "/v4/activities/%d/kudos", True, "empty"),
    ("GET", "/v4/segments/%d/leaderboard?page=1", False, "json"),
    ("PUT", "/v4/devices/%s/heartbeat", True, "empty"),
    ("POST", "/v4/uploads", True, "json"),
    ("GET", "/v4/notifications/unread_count", False, "json"),
    ("GET", "/v4/routes/%d/export.gpx", False, "gpx"),
]


def path(g, template, s):
    if "%s" in template:
        return template % (g.b64ish(16) if "cursor" in template else s["device"])
    if "%d" in template:
        return template % g.r.randint(10**9, 10**10)
    return template


def request(g, s, call):
    method, template, body, _ = call
    h = [(":method", method), (":scheme", "https"), (":authority", API),
         (":path", path(g, template, s)),
         ("accept", "application/json"), ("user-agent", USER_AGENT),
         ("authorization", "Bearer " + s["token"]),
         ("x-api-version", "2026-09-01"),
         ("x-request-id", g.uuid()),
         ("traceparent", "00-%s-%s-01" % (g.hexid(32), g.hexid(16)))]
    if body:
        h += [("content-type", "application/json"), ("content-length", str(g.r.randint(20, 4000)))]
    if method == "GET" and g.r.random() < 0.2:
        h.append(("if-none-match", 'W/"%s"' % g.hexid(20)))
    h.append(("accept-language", "en-GB;q=1.0, de-GB;q=0.9"))
    h.append(("accept-encoding", "br;q=1.0, gzip;q=0.9, deflate;q=0.8"))
    return h


def response(g, s, call, req, t):
    _, _, _, kind = call
    conditional = any(n == "if-none-match" for n, _ in req)
    if conditional and g.r.random() < 0.7:
        status = "304"
    elif kind == "empty":
        status = "204"
    else:
        status = g.r.choice(["200"] * 30 + ["429", "404"])
    h = [(":status", status), ("date", http_date(t))]
    if status in ("200", "404", "429"):
        ctype = {"json": "application/json; charset=utf-8",
                 "gpx": "application/gpx+xml"}[kind if status == "200" else "json"]
        h += [("content-type", ctype), ("content-length", str(g.r.randint(2, 40000)))]
    if status == "200" and kind == "json":
        h.append(("etag", 'W/"%s"' % g.hexid(20)))
    h += [("x-request-id", dict(req)["x-request-id"]),
          ("x-ratelimit-limit", "600, 30000"),
          ("x-ratelimit-usage", "%d, %d" % (s["usage"], s["usage"] + 1200)),
          ("server-timing", "app;dur=%d, db;dur=%d" % (g.r.randint(3, 300), g.r.randint(1, 90)))]
    if status == "429":
        h.append(("retry-after", str(g.r.randint(1, 30))))
    h.append(("cache-control", "private, max-age=0, no-cache"))
    h.append(("vary", "Accept-Encoding, Authorization"))
    h.append(("via", "1.1 %s.edge.trailmate.example" % s["edge"]))
    s["usage"] += 1
    return h


def generate(seed, n=300):
    g = Gen(seed)
    s = {"token": g.b64ish(36) + "." + g.b64ish(120) + "." + g.b64ish(43),
         "device": g.hexid(32), "usage": g.r.randint(10, 200), "edge": g.hexid(12)}
    requests, responses = [], []
    t = BASE_TIME
    for i in range(n):
        if i == n // 2:  # the access token expires and is refreshed
            s["token"] = g.b64ish(36) + "." + g.b64ish(120) + "." + g.b64ish(43)
        call = CALLS[min(int(g.r.expovariate(0.35)), len(CALLS) - 1)]
        t += datetime.timedelta(seconds=g.r.choice([0, 0, 1, 2, 5]))
        req = request(g, s, call)
        requests.append(req)
        responses.append(response(g, s, call, req, t))
    return requests, responses
