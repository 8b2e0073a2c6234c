# Shared by casebook/record.sh and casebook/record-jvm.sh: source it.

# keep_recording BUNDLE DEST: moves a recorded bundle to DEST (replacing
# what was there), its files over 64 KB gzipped first: perfdoctor
# recognises files by content, gzipped or not.
keep_recording() {
	local bundle=$1 dest=$2
	find "$bundle" -type f -size +64k | while read -r f; do
		if [ "$(head -c2 "$f" | od -An -tx1 | tr -d ' ')" != "1f8b" ]; then
			gzip -9 -n "$f" && mv "$f.gz" "$f"
		fi
	done
	chmod -R u=rwX,go=rX "$bundle"
	mkdir -p "$(dirname "$dest")"
	rm -rf "${dest:?}"
	mv "$bundle" "$dest"
}
