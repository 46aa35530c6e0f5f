# Which driver release the adapter runs (sourced by setup.sh and run): the default pins of
# requirements.txt, or those of pins/$CQLFRAME_PYTHON_DRIVER.txt in a venv of its own.
if [[ -n "${CQLFRAME_PYTHON_DRIVER:-}" ]]; then
    requirements="$here/pins/$CQLFRAME_PYTHON_DRIVER.txt"
    venv_name="conformance-python-$CQLFRAME_PYTHON_DRIVER"
    if [[ ! -f "$requirements" ]]; then
        echo "CQLFRAME_PYTHON_DRIVER=$CQLFRAME_PYTHON_DRIVER: no pins for it in $here/pins/ (there are: $(cd "$here/pins" && ls | sed 's/\.txt$//' | tr '\n' ' '))" >&2
        exit 1
    fi
else
    requirements="$here/requirements.txt"
    venv_name="conformance-python"
fi
