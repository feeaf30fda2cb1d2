"""Shared pieces of the corpus generators: HTTP dates, one seeded random source, QIF output.

Standard library only; nothing here reads the clock or the environment, so a profile's output
depends only on its seed.
"""

import random
import string


def http_date(t):
    """RFC 9110 IMF-fixdate, independent of the locale."""
    days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
              "Dec"]
    return "%s, %02d %s %04d %02d:%02d:%02d GMT" % (
        days[t.weekday()], t.day, months[t.month - 1], t.year, t.hour, t.minute, t.second)


class Gen:
    """All randomness comes from one seeded generator, drawn in a fixed order."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def hexid(self, n):
        return "".join(self.r.choice("0123456789abcdef") for _ in range(n))

    def b64ish(self, n):
        alphabet = string.ascii_letters + string.digits + "-_"
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def uuid(self):
        h = self.hexid(32)
        return "%s-%s-4%s-a%s-%s" % (h[:8], h[8:12], h[13:16], h[17:20], h[20:])

    def digits(self, n):
        return "".join(self.r.choice("0123456789") for _ in range(n))

    def b64(self, n_bytes):
        """Base64 of n random bytes, with padding (hashes such as Content-MD5)."""
        alphabet = string.ascii_uppercase + string.ascii_lowercase + string.digits + "+/"
        chars = (n_bytes * 8 + 5) // 6
        pad = (3 - n_bytes % 3) % 3
        return "".join(self.r.choice(alphabet) for _ in range(chars)) + "=" * pad


def write_qif(path, lists, comment):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("# %s\n" % comment)
        for i, fields in enumerate(lists):
            if i:
                f.write("\n")
            for name, value in fields:
                assert "\t" not in name and "\n" not in name + value
                assert name == name.lower()
                f.write("%s\t%s\n" % (name, value))
