# Shared helpers of the image-building scripts (compose-images.sh, torch-image.sh); sourced after
# common.sh, with REPO (the checkout) and LABEL (the image label holding the inputs' hash) set.
# Images are labelled with a hash of their inputs, so a build whose inputs are unchanged is skipped.

# sha: a short hash of stdin
sha() { sha256sum | cut -c1-16; }
# id_of IMAGE / label_of IMAGE: the image's id / its $LABEL ("" when the image is missing)
id_of() { docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true; }
label_of() { docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$1" 2>/dev/null || true; }
# replaced IMAGE OLD_ID: removes the previous build of IMAGE (now untagged), if unused
replaced() { [ -z "$2" ] || [ "$2" = "$(id_of "$1")" ] || docker rmi "$2" >/dev/null 2>&1 || true; }
# files_hash PATH...: a hash of the files under PATHs of the checkout (byte-code left out)
files_hash() { (cd "$REPO" && find "$@" -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 |
  sort -z | xargs -0 sha256sum) | sha; }

# pip_cmd: a pip to download wheels with (the host's, else the project's venv)
pip_cmd() {
  if python3 -m pip --version >/dev/null 2>&1; then echo "python3 -m pip"
  elif [ -x "$REPO/.venv/bin/python" ]; then echo "$REPO/.venv/bin/python -m pip"
  else log "no pip: install python3-pip or run \`make venv\` first"; return 1; fi
}

# project_requirements EXTRAS: what an image installs from pyproject.toml (the base dependencies
# and the comma-separated EXTRAS), so edits elsewhere in pyproject.toml do not refetch wheels
project_requirements() {
  python3 - "$REPO/pyproject.toml" "$1" <<'EOP'
import json, sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
extras = project.get("optional-dependencies", {})
print(json.dumps([project.get("dependencies")] + [extras.get(e) for e in sys.argv[2].split(",")]))
EOP
}
