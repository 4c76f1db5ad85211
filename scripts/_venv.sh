# Sourced by scripts/serve and scripts/test: make ./.venv with the exact versions
# of requirements.lock and the project installed (editable) if it is missing or
# out of date.
VENV=${PBMSERV_VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
stamp="$VENV/.installed-$(cat pyproject.toml requirements.lock | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2
  "$VENV/bin/python" -m pip install -q -r requirements.lock >&2
  "$VENV/bin/python" -m pip install -q --no-deps -e . >&2
  rm -f "$VENV"/.installed-*
  touch "$stamp"
fi
export PATH="$PWD/$VENV/bin:$PATH"
