# Sourced by scripts/serve and scripts/test: make ./.venv with the project
# installed (editable, with its test tools) if it is missing or out of date.
VENV=${PBMSERV_VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
stamp="$VENV/.installed-$(sha1sum pyproject.toml | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2
  "$VENV/bin/python" -m pip install -q -e '.[test]' >&2
  touch "$stamp"
fi
export PATH="$PWD/$VENV/bin:$PATH"
