#!/usr/bin/env python3
"""A raw HTTP client for the skipper serve tests (standard library only).

  client.py sse FILE              check a saved SSE stream as the OpenAI
                                  clients parse it; print a JSON summary
  client.py streams PORT N FILE   one greedy streamed chat request per line
                                  of FILE (a prompt), all at once; print one
                                  JSON object per prompt, in FILE's order
  client.py disconnect PORT       start a long stream, read three events,
                                  close the connection
  client.py slow PORT DELAY [KEY] send a request's body one byte every DELAY
                                  seconds; print how it ended and when
  client.py connections PORT N    hold N connections open, then ask /health
                                  on one more; print what it got, then again
                                  once they are closed
"""
import http.client
import json
import socket
import sys
import threading
import time


def parse_sse(raw):
    """Events of a text/event-stream body as the openai package reads them:
    lines "data: ..." end an event at a blank line; ":" lines are comments."""
    events, data = [], []
    for line in raw.split("\n"):
        if line == "":
            if data:
                events.append("\n".join(data))
                data = []
        elif line.startswith(":"):
            continue
        elif line.startswith("data: "):
            data.append(line[6:])
        else:
            raise ValueError("not an SSE line: %r" % line)
    if data:
        raise ValueError("the stream does not end with a blank line")
    return events


def summary(raw):
    """What a stream said: its text, finish reason, usage, and whether it was
    shaped as OpenAI's (role first for chat, [DONE] last, one id)."""
    events = parse_sse(raw)
    s = {"events": len(events), "text": "", "finish": None, "usage": None, "skipper": None,
         "done_last": bool(events) and events[-1] == "[DONE]", "role_first": False, "ids": 0,
         "object": None, "error": None}
    ids = set()
    for k, ev in enumerate(events):
        if ev == "[DONE]":
            if k != len(events) - 1:
                raise ValueError("[DONE] before the end")
            continue
        d = json.loads(ev)
        if "error" in d:
            s["error"] = d["error"]
            continue
        ids.add(d["id"])
        s["object"] = d["object"]
        if d.get("usage"):
            s["usage"] = d["usage"]
            s["skipper"] = d.get("skipper")
        for c in d["choices"]:
            if d["object"] == "chat.completion.chunk":
                if k == 0 and c["delta"].get("role") == "assistant":
                    s["role_first"] = True
                s["text"] += c["delta"].get("content") or ""
            else:
                s["text"] += c["text"]
            if c.get("finish_reason"):
                s["finish"] = c["finish_reason"]
    s["ids"] = len(ids)
    return s


def post(port, path, body, timeout=600):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    return conn, conn.getresponse()


def streams(port, n_tokens, prompts):
    results = [None] * len(prompts)

    def run(i, prompt):
        try:
            conn, r = post(port, "/v1/chat/completions",
                           {"messages": [{"role": "user", "content": prompt}], "max_tokens": n_tokens,
                            "temperature": 0, "stream": True})
            raw = r.read().decode("utf-8")
            conn.close()
            results[i] = dict(summary(raw), status=r.status, type=r.getheader("Content-Type"))
        except Exception as e:  # reported, not raised: the other streams go on
            results[i] = {"exception": repr(e)}

    threads = [threading.Thread(target=run, args=(i, p)) for i, p in enumerate(prompts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        print(json.dumps(r))


def disconnect(port):
    conn, r = post(port, "/v1/completions",
                   {"prompt": "1, 2, 3, 4,", "max_tokens": 400, "temperature": 0, "stream": True})
    seen = 0
    while seen < 3:
        line = r.fp.readline()
        if not line:
            break
        seen += line.startswith(b"data: ")
    # close the socket itself: the response object may hold a reference
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    print("read %d events, closed" % seen)


def slow(port, delay, key):
    body = b'{"prompt":"' + b"x" * 40 + b'","max_tokens":2}'
    auth = b"Authorization: Bearer %s\r\n" % key.encode() if key else b""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n" % (auth, len(body)))
    t0 = time.time()
    try:
        for b in body:
            s.sendall(bytes([b]))
            time.sleep(delay)
        answer = s.recv(64)
        print("answered %s after %.1f s" % (answer[:12].decode("latin-1") if answer else "nothing",
                                           time.time() - t0))
    except OSError:
        print("dropped after %.1f s" % (time.time() - t0))


def ask_health(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    try:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = s.recv(64)
        return answer.split(b"\r\n")[0].decode("latin-1") if answer else "closed"
    except OSError:
        return "closed"
    finally:
        s.close()


def connections(port, n):
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
    time.sleep(0.3)
    beyond = ask_health(port)
    for h in held:
        h.close()
    time.sleep(0.3)
    print("%s, then %s" % (beyond, ask_health(port)))


def main():
    cmd = sys.argv[1]
    if cmd == "sse":
        print(json.dumps(summary(open(sys.argv[2], encoding="utf-8").read())))
    elif cmd == "streams":
        with open(sys.argv[4], encoding="utf-8") as f:
            prompts = [l.rstrip("\n") for l in f if l.strip()]
        streams(int(sys.argv[2]), int(sys.argv[3]), prompts)
    elif cmd == "disconnect":
        disconnect(int(sys.argv[2]))
    elif cmd == "connections":
        connections(int(sys.argv[2]), int(sys.argv[3]))
    elif cmd == "slow":
        slow(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
