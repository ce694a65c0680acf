# Sourced by the benchmark scripts: the fake Supervisor they start in the background.
# stop_fake stops it (when one runs) and waits for it, so the next one can take its place.
fake=
stop_fake() {
    if [[ -n $fake ]]; then
        kill "$fake" 2>/dev/null || true
        wait "$fake" 2>/dev/null || true
        fake=
    fi
}
