#!/usr/bin/env python3
"""Render the chat templates of tests/data/chat/*.jinja with Jinja2 the way
Hugging Face's apply_chat_template does, as reference output for t-chat.c.

Usage: python3 tests/ref/chat-ref.py   (writes tests/data/chat-ref.tsv)

bos_token is rendered empty: skipper's formatted prompts leave BOS to the
tokenizer (add_bos). Conversations a template refuses (Mistral has no
system role) are left out. Output, tab separated:
  template-file  hex(system) or "-"  hex(user)  hex(rendered prompt)
"""
import os

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
TEMPLATES = ["smollm2", "llama2", "llama3", "mistral", "zephyr"]
CONVERSATIONS = [(None, "Hi"), ("Be brief.", "What is 2+2?\n"), (None, "line one\nline two")]


def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    with open(os.path.join(DATA, "chat-ref.tsv"), "w") as out:
        out.write("# rendered by tests/ref/chat-ref.py with Jinja2 %s; regenerate: python3 tests/ref/chat-ref.py\n"
                  % jinja2.__version__)
        for name in TEMPLATES:
            with open(os.path.join(DATA, "chat", name + ".jinja")) as f:
                tmpl = env.from_string(f.read())
            for system, user in CONVERSATIONS:
                msgs = ([{"role": "system", "content": system}] if system is not None else [])
                msgs.append({"role": "user", "content": user})
                try:
                    text = tmpl.render(messages=msgs, add_generation_prompt=True, bos_token="", eos_token="</s>")
                except jinja2.exceptions.TemplateError:
                    continue
                out.write("%s\t%s\t%s\t%s\n" % (name, system.encode().hex() if system is not None else "-",
                                                user.encode().hex(), text.encode().hex()))


if __name__ == "__main__":
    main()
