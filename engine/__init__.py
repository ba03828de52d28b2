"""Engine of the clinical-summary checking workbench. UI-free: never imports streamlit."""
