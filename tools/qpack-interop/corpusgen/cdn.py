"""Profile `cdn`: a video player and an image-heavy page fetching from two CDN edges over one
connection each way (HLS segments and playlists from one, images from the other).

What it stresses: responses of few names whose values are unique per object or per request
(ETags, request and edge IDs, ray IDs, Via host hashes, ages, byte ranges), beside long values
repeated on every response (NEL and Report-To policies, server timing, cache policies), and
range requests; the requests repeat almost everything but the path.
"""

import datetime

from .common import Gen, http_date

VIDEO = "d2hx7b3kq9z1mp.cdnfront.example"
IMAGES = "images.pixelpost.example"
PAGE = "https://www.pixelpost.example/"
USER_AGENT = ("Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
BASE_TIME = datetime.datetime(2026, 11, 26, 18, 40, 11, tzinfo=datetime.timezone.utc)
POPS = ["LHR61-P4", "LHR61-P4", "LHR61-P4", "LHR3-C1"]


def request(g, kind, s):
    if kind == "segment":
        s["seq"] += 1
        rendition = s["rendition"]
        path = "/v/%s/%s/seg_%05d.m4s" % (s["video"], rendition, s["seq"])
        authority = VIDEO
        accept = "*/*"
    elif kind == "playlist":
        path = "/v/%s/%s/index.m3u8?token=%s" % (s["video"], s["rendition"], s["token"])
        authority = VIDEO
        accept = "*/*"
    else:
        path = "/cdn-cgi/image/width=%d,quality=%d,format=auto/uploads/2026/11/%s.jpg" % (
            g.r.choice([320, 640, 960, 1280]), g.r.choice([75, 85]), g.hexid(24))
        authority = IMAGES
        accept = "image/avif,image/webp,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5"
    h = [(":method", "GET"), (":scheme", "https"), (":authority", authority), (":path", path),
         ("user-agent", USER_AGENT), ("accept", accept),
         ("accept-language", "en-US,en;q=0.5"), ("accept-encoding", "gzip, deflate, br, zstd"),
         ("referer", PAGE)]
    if kind == "segment" and g.r.random() < 0.3:
        start = g.r.randint(0, 2000000)
        h.append(("range", "bytes=%d-%d" % (start, start + g.r.randint(10000, 500000))))
    if authority == VIDEO:
        h += [("origin", PAGE.rstrip("/")), ("sec-fetch-dest", "empty"),
              ("sec-fetch-mode", "cors"), ("sec-fetch-site", "cross-site")]
    else:
        h += [("sec-fetch-dest", "image"), ("sec-fetch-mode", "no-cors"),
              ("sec-fetch-site", "same-site")]
    h.append(("priority", "u=4" if kind != "image" else "u=5, i"))
    return h


def video_response(g, kind, req, t):
    ranged = any(n == "range" for n, _ in req)
    h = [(":status", "206" if ranged else "200"),
         ("content-type", "video/iso.segment" if kind == "segment"
          else "application/vnd.apple.mpegurl")]
    length = g.r.randint(180000, 2400000) if kind == "segment" else g.r.randint(900, 4000)
    h.append(("content-length", str(length)))
    if ranged:
        h.append(("content-range", "bytes %d-%d/%d" % (0, length - 1, length * 3)))
    hit = g.r.random() < 0.8
    h += [("date", http_date(t)),
          ("last-modified", http_date(t - datetime.timedelta(hours=g.r.randint(1, 72)))),
          ("etag", '"%s"' % g.hexid(32)),
          ("cache-control", "public, max-age=31536000" if kind == "segment" else "max-age=2"),
          ("accept-ranges", "bytes"),
          ("server", "AmazonS3"),
          ("x-cache", "Hit from cloudfront" if hit else "Miss from cloudfront"),
          ("via", "1.1 %s.cloudfront.net (CloudFront)" % g.hexid(32)),
          ("x-amz-cf-pop", g.r.choice(POPS)),
          ("x-amz-cf-id", g.b64ish(54) + "=="),
          ("access-control-allow-origin", PAGE.rstrip("/")),
          ("vary", "Origin"),
          ("timing-allow-origin", "*")]
    if hit:
        h.append(("age", str(g.r.randint(1, 86400))))
    return h


def image_response(g, t):
    h = [(":status", "200"), ("date", http_date(t)),
         ("content-type", g.r.choice(["image/avif", "image/webp", "image/webp"])),
         ("content-length", str(g.r.randint(3000, 300000))),
         ("cf-ray", "%s-LHR" % g.hexid(16)),
         ("cf-cache-status", g.r.choice(["HIT"] * 6 + ["MISS", "REVALIDATED"])),
         ("accept-ranges", "bytes"),
         ("age", str(g.r.randint(0, 600000))),
         ("cache-control", "public, max-age=31536000"),
         ("etag", '"%s"' % g.hexid(32)),
         ("last-modified", http_date(t - datetime.timedelta(days=g.r.randint(1, 400)))),
         ("vary", "Accept"),
         ("cf-bgj", "imgq:85,h2pri"),
         ("cf-polished", "origSize=%d" % g.r.randint(10000, 900000)),
         ("content-disposition", 'inline; filename="%s.webp"' % g.hexid(24)),
         ("report-to", '{"endpoints":[{"url":"https:\\/\\/a.nel.edgeflare.example\\/report\\/v4'
                       '?s=%s"}],"group":"cf-nel","max_age":604800}' % g.b64ish(120)),
         ("nel", '{"success_fraction":0,"report_to":"cf-nel","max_age":604800}'),
         ("server", "cloudflare"),
         ("alt-svc", 'h3=":443"; ma=86400'),
         ("server-timing", 'cfL4;desc="?proto=QUIC&rtt=%d&min_rtt=%d&rtt_var=%d&sent=%d&recv=%d'
                           '&lost=0&retrans=0&sent_bytes=%d&recv_bytes=%d&delivery_rate=%d'
                           '&cwnd=%d&unsent_bytes=0&cid=%s&ts=%d&x=0"'
          % (g.r.randint(9000, 30000), g.r.randint(8000, 9000), g.r.randint(500, 9000),
             g.r.randint(10, 900), g.r.randint(5, 300), g.r.randint(10**4, 10**7),
             g.r.randint(10**3, 10**5), g.r.randint(10**5, 10**8), g.r.randint(12000, 90000),
             g.hexid(16), g.r.randint(10, 2000)))]
    return h


def generate(seed, n=300):
    g = Gen(seed)
    s = {"video": g.hexid(16), "rendition": "1080p", "seq": 0, "token": g.b64ish(48)}
    requests, responses = [], []
    t = BASE_TIME
    for i in range(n):
        if i % 40 == 0:
            kind = "playlist"
            s["rendition"] = g.r.choice(["1080p", "720p", "1080p"])
        else:
            kind = g.r.choice(["segment", "segment", "image"])
        t += datetime.timedelta(seconds=g.r.choice([0, 1, 2]))
        req = request(g, kind, s)
        requests.append(req)
        responses.append(video_response(g, kind, req, t) if kind != "image"
                         else image_response(g, t))
    return requests, responses
