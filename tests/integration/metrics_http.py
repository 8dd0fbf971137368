"""GET /metrics of the collection's own HTTPS metrics endpoints (the auth
service's and the MQTT gateway's) as their tests read them: the certificate
verified with the CA, basic auth sent up front, the status returned instead of
raised."""
import base64
import ssl
import urllib.error
import urllib.request


def metrics_scrape(port, ca, user=None, password=None, scheme="https"):
    """(HTTP status, body) of GET /metrics on 127.0.0.1:``port``; basic auth
    when ``user`` is given; ``scheme`` "http" tries plain HTTP."""
    request = urllib.request.Request("%s://127.0.0.1:%d/metrics" % (scheme, port))
    if user is not None:
        token = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        request.add_header("Authorization", "Basic " + token)
    context = ssl.create_default_context(cafile=ca)
    try:
        with urllib.request.urlopen(request, context=context if scheme == "https" else None, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
