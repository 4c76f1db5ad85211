# Sourced by scripts/serve and scripts/test: make ./.venv with exactly the hashed locks' files
# (requirements.lock, the runtime; requirements-dev.lock, the test and dev tools and the build backend)
# and the project installed (editable, --no-deps, built by the locked hatchling: nothing unhashed is
# fetched), if it is missing or any lock, pyproject.toml or this file changed since it was made.
# PBMSERV_PYTHON names the interpreter for a new venv (default python3); PBMSERV_VENV its folder.
VENV=${PBMSERV_VENV:-.venv}
case "$VENV" in /*) ;; *) VENV="$PWD/$VENV" ;; esac
if [ ! -x "$VENV/bin/python" ]; then
  "${PBMSERV_PYTHON:-python3}" -m venv "$VENV"
fi
stamp="$VENV/.installed-$(cat pyproject.toml requirements.lock requirements-dev.lock scripts/_venv.sh | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  "$VENV/bin/python" -m pip install -q --require-hashes --only-binary :all: -r requirements.lock -r requirements-dev.lock >&2
  # packages an older lock brought and these do not name go, so the venv holds the locks and nothing more
  extra=$("$VENV/bin/python" - <<'EOF'
import importlib.metadata as md, re
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
locked = {norm(m.group(1)) for f in ("requirements.lock", "requirements-dev.lock")
          for m in re.finditer(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", open(f).read(), re.M)}
keep = locked | {"pip", "setuptools", "wheel", "pbmserv-terrace"}
print(" ".join(sorted({norm(d.metadata["Name"]) for d in md.distributions()} - keep)))
EOF
)
  if [ -n "$extra" ]; then
    # shellcheck disable=SC2086
    "$VENV/bin/python" -m pip uninstall -q -y $extra >&2
  fi
  "$VENV/bin/python" -m pip install -q --no-deps --no-build-isolation -e . >&2
  rm -f "$VENV"/.installed-*
  touch "$stamp"
fi
export PATH="$VENV/bin:$PATH"
