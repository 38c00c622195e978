"""Does the Prefect UI draw an inline (data: URI) image in a markdown artifact? V2 and V1 pages, headless Chromium.

    .venv/bin/python bench/probe_ui_images.py [OUT_FOLDER]

Starts `prefect server start` on a free loopback port with a temporary PREFECT_HOME, creates a flow run and a
markdown artifact holding an SVG and a PNG data: URI image (markdown) and a raw <img>, plus one in the
artifact's description, and a table artifact (as evalduck's summary) with an SVG image in its description, opens the artifact and flow-run pages in Debian's Chromium, prints each <img> with its
natural size, saves screenshots, and stops the server. The finding (2026-12-01, Prefect 3.9.1): every image
is drawn; see docs/architecture.md, "The HTML report". Rerun it after a Prefect upgrade.
"""
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

port = free_port()
home = tempfile.mkdtemp(prefix="uiprobe-home-")
env = {**os.environ, "PREFECT_HOME": home, "PREFECT_SERVER_API_HOST": "127.0.0.1", "PREFECT_SERVER_API_PORT": str(port),
       "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
venv = str(Path(sys.executable).parent)
out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="ui-images-"))
out.mkdir(parents=True, exist_ok=True)
srv = subprocess.Popen([f"{venv}/prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)], env=env,
                       stdout=open(out / "server.log", "w"), stderr=subprocess.STDOUT, start_new_session=True)
api = f"http://127.0.0.1:{port}/api"
try:
    for _ in range(240):
        try:
            if httpx.get(f"{api}/health", timeout=2).status_code == 200: break
        except Exception: pass
        time.sleep(0.5)
    print("ui-settings", httpx.get(f"http://127.0.0.1:{port}/ui-settings").json()["api_url"])
    import vl_convert as vlc
    spec = {"data": {"values": [{"x": i, "y": (i * 7) % 5} for i in range(6)]}, "mark": "line",
            "encoding": {"x": {"field": "x", "type": "quantitative"}, "y": {"field": "y", "type": "quantitative"}},
            "width": 200, "height": 60}
    svg = vlc.vegalite_to_svg(spec)
    png = vlc.vegalite_to_png(spec)
    svg_uri = "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()
    png_uri = "data:image/png;base64," + base64.b64encode(png).decode()
    md = (f"# probe\n\nsvg:\n\n![svgchart]({svg_uri})\n\npng:\n\n![pngchart]({png_uri})\n\n"
          f"html img:\n\n<img alt=\"htmlimg\" src=\"{png_uri}\">\n")
    c = httpx.Client(base_url=api, timeout=30)
    flow = c.post("/flows/", json={"name": "uiprobe"}).json()
    run = c.post("/flow_runs/", json={"flow_id": flow["id"], "name": "probe-run", "state": {"type": "COMPLETED", "name": "Completed"}}).json()
    art = c.post("/artifacts/", json={"key": "probe-md", "type": "markdown", "data": md, "flow_run_id": run["id"],
                                       "description": f"desc with image ![descimg]({png_uri})"}).json()
    table = c.post("/artifacts/", json={"key": "probe-table", "type": "table", "data": [{"scorer": "tone", "mean": 0.9}],
                                         "flow_run_id": run["id"], "description": f"table ![tabledesc]({svg_uri})"}).json()
    print("artifact", art["id"], "table artifact", table["id"], "run", run["id"])
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(tempfile.mkdtemp(), executable_path="/usr/bin/chromium", headless=True,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"],
            viewport={"width": 1400, "height": 1000})
        ctx.route("**/*amplitude.com/**", lambda r: r.abort())
        page = ctx.new_page()
        urls = {
            "v2-artifact": f"http://127.0.0.1:{port}/v2/artifacts/artifact/{art['id']}",
            "v2-run-artifacts": f"http://127.0.0.1:{port}/v2/runs/flow-run/{run['id']}?tab=Artifacts",
            "v2-table-artifact": f"http://127.0.0.1:{port}/v2/artifacts/artifact/{table['id']}",
            "v1-artifact": f"http://127.0.0.1:{port}/artifacts/artifact/{art['id']}",
                    }
        for label, url in urls.items():
            page.goto(url)
            try:
                page.wait_for_load_state("networkidle", timeout=30000)
            except Exception:
                print(label, "networkidle timeout")
            wanted = {"v2-run-artifacts": "img[alt=descimg]", "v2-table-artifact": "img[alt=tabledesc]"}.get(
                label, "img[alt=pngchart]")
            try:  # the V2 pages show skeletons first; a loaded machine takes seconds
                page.wait_for_selector(wanted, timeout=30000)
            except Exception:
                print(label, f"no {wanted} within 30 s")
            time.sleep(1)
            imgs = page.evaluate("""() => Array.from(document.querySelectorAll('img')).map(i => ({alt: i.alt,
                src: (i.getAttribute('src')||'').slice(0,40), w: i.naturalWidth, h: i.naturalHeight,
                bw: i.getBoundingClientRect().width}))""")
            text_has = page.evaluate("() => document.body.innerText.includes('probe') ")
            print(label, page.url, "text 'probe':", text_has, "imgs:", json.dumps(imgs))
            page.screenshot(path=str(out / f"{label}.png"), full_page=True)
        ctx.close()
finally:
    os.killpg(srv.pid, signal.SIGTERM)
    srv.wait(timeout=30)
