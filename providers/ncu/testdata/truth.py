# Independent truth for the ncu CSV decoder: Python's csv module reads an ncu --csv page
# and prints its rows (measurements and observations) and per-launch counts as JSON.
import csv
import json
import sys


def number(text):
    t = text.strip().replace(",", "")
    if not t:
        return text
    try:
        return float(t)
    except ValueError:
        return text


def main(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    out = []
    if header[11:15] == ["Section Name", "Metric Name", "Metric Unit", "Metric Value"]:
        for r in rows[1:]:
            r = r + [""] * (len(header) - len(r))
            if r[12]:
                out.append({"kind": "measurement", "launch": int(r[0]), "section": r[11], "metric": r[12],
                            "unit": r[13], "value": number(r[14])})
            if len(header) > 15 and r[15]:
                s = number(r[19])
                out.append({"kind": "observation", "launch": int(r[0]), "section": r[11], "rule": r[15],
                            "type": r[16], "speedup": s if isinstance(s, float) else None})
    else:
        units = rows[1]
        for r in rows[2:]:
            for i in range(11, len(header)):
                out.append({"kind": "measurement", "launch": int(r[0]), "section": "", "metric": header[i],
                            "unit": units[i], "value": number(r[i])})
    counts = {}
    for o in out:
        c = counts.setdefault(str(o["launch"]), {"measurement": 0, "observation": 0})
        c[o["kind"]] += 1
    json.dump({"rows": out, "counts": counts}, sys.stdout)


main(sys.argv[1])
