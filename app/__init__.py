"""The Streamlit dashboard (``streamlit run app/streamlit_app.py``) over advisor's core."""
