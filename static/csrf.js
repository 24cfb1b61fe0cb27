// Every POST form of a signed-in page carries the sign-in's CSRF token:
// forms rendered by Parley include it, and this adds it to any that lack it
// (the formdata event fires for form.submit() too).
document.addEventListener("formdata", (e) => {
	const form = e.target;
	const meta = document.querySelector('meta[name="csrf-token"]');
	if (!meta || !form || (form.method || "").toLowerCase() !== "post") return;
	if (!e.formData.has("csrf")) e.formData.append("csrf", meta.content);
});
