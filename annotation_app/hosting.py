"""The nginx configuration of several app processes behind one proxy (``mindeval app serve``).

What it sets up, and why:

- one ``upstream`` of the N processes on consecutive loopback ports, each with passive health
  checks (``max_fails=1 fail_timeout=10s``: a process that refuses a connection is left out for
  10 s and the request goes to the next one, ``proxy_next_upstream``);
- WebSocket upgrades (Streamlit's page talks over ``/_stcore/stream``), with a day-long read
  timeout since that connection idles between a person's clicks;
- session affinity by a routing cookie (``mindeval_route``, a random id nginx sets on a browser's
  first response; ``hash ... consistent``). Streamlit keeps a few things in the memory of the
  process that ran the page (uploaded files, download and media files), so one browser's requests
  should stay on one process. ``ip_hash`` would also keep them together, but sends everybody behind
  one office address (a lab's NAT) to the same process; the cookie spreads browsers evenly. The
  cookie carries no secret: sign-in lives in the database, so when a process dies its browsers
  move to another and stay signed in;
- ``X-Forwarded-For`` (nginx appends the address it saw, the right-most entry, which is what
  ``--trusted-proxy-header X-Forwarded-For`` reads for per-client sign-in limits);
- plain HTTP on the listen address, and a commented TLS server block for the operator's own
  certificate.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

UPSTREAM = "mindeval_app"
ROUTE_COOKIE = "mindeval_route"


class ProxySite(BaseModel):
    """What the nginx site needs to know: where the app processes are and where to listen."""

    ports: list[int] = Field(min_length=1)
    listen: str = "127.0.0.1:8080"
    server_name: str = "_"
    fail_timeout_s: int = 10
    max_body_mb: int = 200


def _servers(site: ProxySite) -> str:
    return "\n".join(f"    server 127.0.0.1:{p} max_fails=1 fail_timeout={site.fail_timeout_s}s;"
                     for p in site.ports)


def _location() -> str:
    return f"""    location / {{
        proxy_pass http://{UPSTREAM};
        proxy_http_version 1.1;
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_set_header Upgrade $http_upgrade;
        proxy_set_header Connection $mindeval_connection;
        proxy_read_timeout 1d;
        proxy_send_timeout 1d;
        proxy_connect_timeout 5s;
        proxy_buffering off;
        proxy_next_upstream error timeout http_502 http_503;
        proxy_next_upstream_tries 0;
        add_header Set-Cookie $mindeval_route_cookie always;
    }}"""


def site_config(site: ProxySite) -> str:
    """The nginx ``http``-level configuration (a file for ``/etc/nginx/conf.d/`` or ``sites-enabled/``)."""
    loc = _location()
    tls_loc = "\n".join("#" + line for line in loc.splitlines())
    return f"""# MindEval annotation app: {len(site.ports)} process(es) behind nginx. Written by `mindeval app serve`;
# written again (same content for the same options) at every start. See docs/annotation-app.md.

map $http_upgrade $mindeval_connection {{
    default upgrade;
    ""      close;
}}
# Session affinity: a random routing id per browser (no secret; sign-in lives in the database).
map $cookie_{ROUTE_COOKIE} $mindeval_route {{
    ""      $request_id;
    default $cookie_{ROUTE_COOKIE};
}}
map $cookie_{ROUTE_COOKIE} $mindeval_route_cookie {{
    ""      "{ROUTE_COOKIE}=$request_id; Path=/; HttpOnly; SameSite=Lax";
    default "";
}}

upstream {UPSTREAM} {{
    hash $mindeval_route consistent;
{_servers(site)}
}}

server {{
    listen {site.listen};
    server_name {site.server_name};
    client_max_body_size {site.max_body_mb}m;
{loc}
}}

# TLS with your own certificate: uncomment, set the paths, and make the plain server above
# redirect (return 301 https://$host$request_uri;) or listen on loopback only.
#server {{
#    listen 443 ssl http2;
#    server_name {site.server_name};
#    ssl_certificate     /etc/ssl/certs/annotation.example.org.pem;
#    ssl_certificate_key /etc/ssl/private/annotation.example.org.key;
#    client_max_body_size {site.max_body_mb}m;
{tls_loc}
#}}
"""


def standalone_config(site_file: str, prefix: str, pid_file: str = "nginx.pid") -> str:
    """A whole ``nginx.conf`` that runs without root (``nginx -p PREFIX -c FILE``): every path
    in ``prefix``, the site included. For trying the site out, the tests and the benchmark."""
    return f"""daemon off;
worker_processes 1;
pid {prefix}/{pid_file};
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    include {site_file};
}}
"""
